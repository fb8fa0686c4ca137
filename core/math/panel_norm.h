/* LayerNorm of rows held as 32-row panels (the layout of sgemm_bcast.h: each column's 32 floats
 * together), for a residual stream that stays in that layout between products. Internal to the
 * encoder's files. */
#ifndef EMBED_PANEL_NORM_H
#define EMBED_PANEL_NORM_H

/* Each of the panel's 32 rows of H becomes LayerNorm(row) * g + b, in place: mean, variance and
 * (x - mean) / sqrt(variance + eps) in double, rounded to float, then * g + b in float. Every
 * lane is normed, padding included (lanes never mix). Call only where emb_sgemm_bcast_supported(). */
void emb_panel_layernorm(float *panel, const float *g, const float *b, int H, float eps);

#endif
