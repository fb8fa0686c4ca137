#include "file.h"
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

int emb_file_open(const char *path, size_t *size, char err[EMB_ERR_LEN]) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return emb_fail(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return emb_fail(err, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return emb_fail(err, "%s: not a regular file (%s)", path, kind_of(st.st_mode));
    }
    *size = (size_t)st.st_size;
    return fd;
}

int emb_is_lfs_pointer(const void *buf, size_t len) {
    return len >= sizeof LFS_MAGIC - 1 && memcmp(buf, LFS_MAGIC, sizeof LFS_MAGIC - 1) == 0;
}

int emb_lfs_error(const char *path, const char *what, char err[EMB_ERR_LEN]) {
    return emb_fail(err, "%s: this is a Git LFS pointer, not the %s; run `git lfs pull` in the model folder",
                    path, what);
}

int emb_read_file(const char *path, size_t max_bytes, char **buf, size_t *len, char err[EMB_ERR_LEN]) {
    *buf = NULL;
    size_t size;
    int fd = emb_file_open(path, &size, err);
    if (fd < 0) return -1;
    if (size > max_bytes) {
        close(fd);
        return emb_fail(err, "%s: %zu bytes, more than the %zu this file may have", path, size, max_bytes);
    }
    char *b = malloc(size + 1);
    if (!b) {
        close(fd);
        return emb_fail(err, "%s: out of memory", path);
    }
    size_t n = 0;
    while (n < size) { /* a file that shrinks meanwhile gives what is left */
        ssize_t r = read(fd, b + n, size - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(b);
            close(fd);
            return emb_fail(err, "%s: cannot read: %s", path, strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    b[n] = 0;
    if (emb_is_lfs_pointer(b, n)) {
        free(b);
        return emb_lfs_error(path, "file's content", err);
    }
    *buf = b;
    if (len) *len = n;
    return 0;
}
