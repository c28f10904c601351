/*
 * The recording half of the power-loss simulation (tests/python/powerloss.py): an LD_PRELOAD
 * library that wraps fsync(2) and fdatasync(2) and, after each one that succeeds on a regular
 * file under $STRATA_POWERLOSS_DIR, appends "<size> <path>\n" to $STRATA_POWERLOSS_LOG, where
 * <size> is the file's length when the sync began. Every byte below that length was written
 * before the sync started, so it is on stable storage once the sync returns; bytes written after
 * it began may or may not be, and the simulation counts them as lost (a power cut is allowed to
 * lose them). After a kill -9 the harness cuts every file back to its last recorded length, so
 * what the server handed to the kernel but never synced is really gone.
 *
 * It knows nothing of Strata or RocksDB: it sees only the syscalls, which is the point (RocksDB's
 * own syncs, in group commit, at memtable switches and for its MANIFEST and table files, count
 * exactly as the kernel would count them). Each line is written with one write(2) on an
 * O_APPEND descriptor, after the sync returned and before the caller sees the result, so a
 * caller that acts on a finished sync (acknowledges a write) does so after its line is in the
 * log. A line cut short by the kill has no newline and is ignored. Linux and glibc only.
 *
 *   cc -O2 -shared -fPIC -o libpowerloss.so powerloss_shim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int (*sync_fn)(int);

static int log_fd = -1;
static const char *watched_dir;
static size_t watched_len;

__attribute__((constructor)) static void powerloss_init(void) {
    const char *log_path = getenv("STRATA_POWERLOSS_LOG");
    watched_dir = getenv("STRATA_POWERLOSS_DIR");
    if (log_path == NULL || watched_dir == NULL) return;
    watched_len = strlen(watched_dir);
    log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

/* Whether `fd` is a regular file under the watched directory; fills `path` and `size`. */
static int watched(int fd, char *path, size_t path_cap, long long *size) {
    char link[64];
    struct stat st;
    if (log_fd < 0) return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, path_cap - 1);
    if (n <= 0) return 0;
    path[n] = '\0';
    if ((size_t)n <= watched_len || strncmp(path, watched_dir, watched_len) != 0 ||
        path[watched_len] != '/')
        return 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    *size = (long long)st.st_size;
    return 1;
}

static int recorded_sync(int fd, sync_fn *cache, const char *name) {
    sync_fn real = __atomic_load_n(cache, __ATOMIC_RELAXED);
    if (real == NULL) {
        real = (sync_fn)dlsym(RTLD_NEXT, name);
        __atomic_store_n(cache, real, __ATOMIC_RELAXED);
    }
    char path[PATH_MAX];
    long long size = 0;
    int tracked = watched(fd, path, sizeof path, &size);
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    int rc = real(fd);
    if (rc == 0 && tracked) {
        int saved = errno;
        char line[PATH_MAX + 32];
        int len = snprintf(line, sizeof line, "%lld %s\n", size, path);
        if (len > 0 && (size_t)len < sizeof line) {
            ssize_t ignored = write(log_fd, line, (size_t)len);
            (void)ignored;
        }
        errno = saved;
    }
    return rc;
}

static sync_fn real_fsync, real_fdatasync;

int fsync(int fd) { return recorded_sync(fd, &real_fsync, "fsync"); }

int fdatasync(int fd) { return recorded_sync(fd, &real_fdatasync, "fdatasync"); }
