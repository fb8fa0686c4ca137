/* The files of a model folder: one test that a file is there and one way to open and read it
 * (every file core reads goes through emb_file_open).
 * Anything but a regular file (a FIFO, a device, a directory) in a file's place is an error,
 * never a hang, and a Git LFS pointer left where the content should be is recognised.
 * Messages name the file: "PATH: cannot open: <reason>", "PATH: not a regular file (a FIFO)". */
#ifndef EMBED_FILE_H
#define EMBED_FILE_H
#include <stddef.h>
#include "base/emb_common.h"

/* 1 if anything is at path, even what cannot be read (a FIFO, a dangling or looping symlink),
 * so that reading it gives a clear error rather than "missing"; 0 if nothing is there. */
int emb_path_exists(const char *path);

/* buf = dir "/" name; an error when it does not fit in cap bytes. */
int emb_path_join(char *buf, size_t cap, const char *dir, const char *name, char err[EMB_ERR_LEN]);

/* What stat(2) finds at path, following symlinks (EMB_PATH_MISSING when it fails): tells a folder
 * from a file given in its place. */
typedef enum { EMB_PATH_MISSING, EMB_PATH_DIR, EMB_PATH_OTHER } emb_path_kind;
emb_path_kind emb_path_kind_of(const char *path);

/* Opens path for reading without ever blocking (O_NONBLOCK, so a FIFO cannot hang the open) and
 * refuses anything but a regular file, and a Git LFS pointer left in place of the `what` (e.g.
 * "weights"): "PATH: this is a Git LFS pointer, not the <what>; run `git lfs pull` in the model
 * folder". Returns the descriptor (close-on-exec), with the file's size in *size, or -1 with a
 * message. */
int emb_file_open(const char *path, const char *what, size_t *size, char err[EMB_ERR_LEN]);

/* Reads up to size bytes of the open file fd from its start into buf; *got gets how many there
 * were (fewer when the file shrank since it was opened). */
int emb_file_read(int fd, const char *path, void *buf, size_t size, size_t *got, char err[EMB_ERR_LEN]);

/* 1 if the bytes begin as a Git LFS pointer file does ("version https://git-lfs..."). */
int emb_is_lfs_pointer(const void *buf, size_t len);

/* Reads the whole regular file at path (at most max_bytes, checked before allocating) into a
 * NUL-terminated malloc'd buffer; *len (may be NULL) gets its length. A Git LFS pointer is an
 * error. */
int emb_read_file(const char *path, size_t max_bytes, char **buf, size_t *len, char err[EMB_ERR_LEN]);

#endif
