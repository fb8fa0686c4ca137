#include "base/file.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LFS_MAGIC "version https://git-lfs.github.com/spec/"

int emb_path_exists(const char *path) {
    struct stat st;
    /* lstat: a dangling symlink is "there" (and then an open error), not silently absent */
    return lstat(path, &st) == 0 || (errno != ENOENT && errno != ENOTDIR);
}

int emb_path_join(char *buf, size_t cap, const char *dir, const char *name, char err[EMB_ERR_LEN]) {
    if ((size_t)snprintf(buf, cap, "%s/%s", dir, name) >= cap)
        return emb_fail(err, "%.100s...: path too long", dir);
    return 0;
}

static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a plain file";
}

emb_path_kind emb_path_kind_of(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return EMB_PATH_MISSING;
    return S_ISDIR(st.st_mode) ? EMB_PATH_DIR : EMB_PATH_OTHER;
}

int emb_is_lfs_pointer(const void *buf, size_t len) {
    return len >= sizeof LFS_MAGIC - 1 && memcmp(buf, LFS_MAGIC, sizeof LFS_MAGIC - 1) == 0;
}

int emb_file_read(int fd, const char *path, void *buf, size_t size, size_t *got, char err[EMB_ERR_LEN]) {
    size_t n = 0;
    while (n < size) {
        ssize_t r = pread(fd, (char *)buf + n, size - n, (off_t)n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return emb_fail(err, "%s: cannot read: %s", path, strerror(errno));
        if (r == 0) break;
        n += (size_t)r;
    }
    *got = n;
    return 0;
}

int emb_file_open(const char *path, const char *what, size_t *size, char err[EMB_ERR_LEN]) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return emb_fail(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    char head[64];
    size_t got;
    int rc;
    if (fstat(fd, &st) != 0) rc = emb_fail(err, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode)) rc = emb_fail(err, "%s: not a regular file (%s)", path, kind_of(st.st_mode));
    else if ((rc = emb_file_read(fd, path, head, sizeof head, &got, err)) == 0 && emb_is_lfs_pointer(head, got))
        rc = emb_fail(err, "%s: this is a Git LFS pointer, not the %s; run `git lfs pull` in the model folder",
                      path, what);
    if (rc) {
        close(fd);
        return -1;
    }
    *size = (size_t)st.st_size;
    return fd;
}

int emb_read_file(const char *path, size_t max_bytes, char **buf, size_t *len, char err[EMB_ERR_LEN]) {
    *buf = NULL;
    size_t size, n;
    int fd = emb_file_open(path, "file's content", &size, err);
    if (fd < 0) return -1;
    char *b = NULL;
    int rc = 0;
    if (size > max_bytes)
        rc = emb_fail(err, "%s: %zu bytes, more than the %zu this file may have", path, size, max_bytes);
    else if (!(b = malloc(size + 1))) rc = emb_fail(err, "%s: out of memory", path);
    else rc = emb_file_read(fd, path, b, size, &n, err); /* a file that shrinks meanwhile gives what is left */
    close(fd);
    if (rc) {
        free(b);
        return -1;
    }
    b[n] = 0;
    *buf = b;
    if (len) *len = n;
    return 0;
}
