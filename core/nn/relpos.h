/* Position schemes that act inside attention instead of adding a vector to the input:
 * rotary embeddings (RoPE: queries and keys rotated by position-dependent angles, so that their
 * dot product depends only on the distance) and ALiBi (a per-head penalty on the attention
 * score growing with the distance). Plain functions of numbers: the encoder and any SQL
 * function that shows these schemes compute them the same way. */
#ifndef EMBED_RELPOS_H
#define EMBED_RELPOS_H

/* ALiBi's slopes for n heads (Press et al.; as transformers' BLOOM and JinaBERT compute them):
 * for n a power of two, s_h = start^(h+1) with start = 2^(-8/n); otherwise the slopes of the
 * largest power of two below n followed by every other slope of twice that power. */
void emb_relpos_alibi_slopes(int n_heads, float *out);

/* One row of that table: the angles of position pos (any real) for rot rotated dimensions (rot
 * even) and base theta, cos(pos * w_i) for i < rot/2 then sin(pos * w_i), w_i = theta^(-2i/rot),
 * in double. These are the angles of the sinusoidal formula with dim = rot: PE(pos, 2i) is the
 * sine and PE(pos, 2i+1) the cosine of the same pos * w_i. out: rot floats. */
void emb_relpos_rope_angles(double theta, int rot, double pos, float *out);

/* The rotary table of positions 0..n_pos-1 for rot rotated dimensions (rot even) and base theta:
 * row p holds cos(p * w_i) for i < rot/2, then sin(p * w_i), w_i = theta^(-2i/rot), angles in
 * double. out: n_pos * rot floats. */
void emb_relpos_rope_table(double theta, int rot, int n_pos, float *out);

/* The same table as transformers computes it, whatever the model's dtype: inverse frequencies
 * 1 / theta^(2i/rot) in float32, each angle their float32 product with the position, then its
 * float32 cosine and sine. At position 1,400 an angle is then up to 1e-4 off the exact one, which
 * the decoders' references (Qwen3, Gemma3) carry: their long cases need this table to agree
 * within 1e-5. */
void emb_relpos_rope_table_f32(double theta, int rot, int n_pos, float *out);

/* Rotates x[0..rot) by one row of that table, pairing dimension i with i + rot/2 ("rotate
 * half", as GPT-NeoX, NomicBERT and ModernBERT do); dimensions from rot on are left alone. */
void emb_relpos_rope_rotate(float *x, const float *row, int rot);
#endif
