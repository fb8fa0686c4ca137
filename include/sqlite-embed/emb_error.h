/* Public API of libembedcore (installed as <sqlite-embed/emb_error.h>).
 * How every function reports failure: it returns 0 on success and nonzero on failure, and then
 * has written a message of at most EMB_ERR_LEN bytes (NUL included) into its err argument, e.g.
 * "config.json: key 'hidden_size' is not an integer" or "PATH: cannot open: No such file". */
#ifndef EMBED_EMB_ERROR_H
#define EMBED_EMB_ERROR_H

#ifndef EMB_ERR_LEN
#define EMB_ERR_LEN 256
#endif

#endif
