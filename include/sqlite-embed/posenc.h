/* Public API of libembedcore (installed as <sqlite-embed/posenc.h>).
 * The sinusoidal position encoding of "Attention Is All You Need":
 * PE(pos, 2i) = sin(pos / base^(2i/dim)), PE(pos, 2i+1) = cos(pos / base^(2i/dim)). */
#ifndef EMBED_POSENC_H
#define EMBED_POSENC_H
#include <stddef.h>

/* Writes dim values for position pos. Computed in double, stored as float. */
void emb_sinusoidal(double pos, size_t dim, double base, float *out);

#endif
