/* Conventions shared by all of core/: functions return 0 on success, nonzero on
 * failure, and then write a message of at most EMB_ERR_LEN bytes into err. */
#ifndef EMBED_COMMON_H
#define EMBED_COMMON_H
#ifndef EMB_ERR_LEN
#define EMB_ERR_LEN 256
#endif
#endif
