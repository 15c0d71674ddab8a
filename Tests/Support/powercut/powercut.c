// powercut: an LD_PRELOAD layer that records which writes a process made
// durable, so a test can simulate a power cut after killing it.
//
// In the spirit of SQLite's own crash tests (src/test6.c): data written but
// not yet fsynced may be lost, partly written or written in a different
// order when the power fails; data that an fsync/fdatasync returned for is
// on disk. The layer keeps, for every tracked file, a *durable image* (the
// file's content as of its last sync) and a *pending log* of the writes and
// truncations made since. It never changes what the process sees: every call
// goes through to the real file system.
//
//   POWERCUT_PATH=/dir/queue.sqlite   files whose path starts with this are
//                                     tracked (the queue, its -wal and
//                                     -journal), except "-shm" (shared memory,
//                                     rebuilt at open)
//   POWERCUT_LOG=/dir/powercut        where images and logs go:
//                                     <basename>.durable, <basename>.pending
//   POWERCUT_SYNC_DELAY_US=N          optional: a slow disk; each sync of a
//                                     tracked file waits N µs first, so a kill
//                                     lands more often while writes are unsynced
//
// After `kill -9`, Tests/Support/powercut.py "cut" rebuilds each file from
// its durable image plus a random part of the pending writes (each kept, lost
// or torn at a 512-byte sector), the way a disk might have left it.
//
// Not modelled: directory entries (a created file is assumed to exist after
// the cut; SQLite fsyncs the directory itself where it matters), memory-mapped
// writes (SQLite writes with pwrite even when it maps the file for reading).
//
// Build: cc -shared -fPIC -O1 -o libpowercut.so powercut.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FDS 65536
#define MAX_FILES 16

typedef struct {
    char name[256];  // basename, e.g. "queue.sqlite-wal"
    char path[4096];
} TrackedFile;

static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static TrackedFile files[MAX_FILES];
static int fileCount;
static signed char fdFile[MAX_FDS];  // fd → index into files + 1, 0 = not tracked
static const char *trackedPrefix;
static const char *logDirectory;
static int ready;
static useconds_t syncDelay;

static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_close)(int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off64_t);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off64_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);

__attribute__((constructor)) static void setup(void) {
    real_open = dlsym(RTLD_NEXT, "open");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_close = dlsym(RTLD_NEXT, "close");
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    real_ftruncate = dlsym(RTLD_NEXT, "ftruncate");
    real_ftruncate64 = dlsym(RTLD_NEXT, "ftruncate64");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_unlink = dlsym(RTLD_NEXT, "unlink");
    real_unlinkat = dlsym(RTLD_NEXT, "unlinkat");
    trackedPrefix = getenv("POWERCUT_PATH");
    logDirectory = getenv("POWERCUT_LOG");
    ready = trackedPrefix && *trackedPrefix && logDirectory && *logDirectory;
    const char *delay = getenv("POWERCUT_SYNC_DELAY_US");
    syncDelay = delay ? (useconds_t)strtoul(delay, NULL, 10) : 0;
}

static void fail(const char *what, const char *path) {
    // The layer cannot keep its promise: stop the process loudly rather than
    // let a test pass on a record it did not keep.
    char message[4600];
    int n = snprintf(message, sizeof message, "powercut: %s %s: %s\n", what, path, strerror(errno));
    if (n > 0) real_write(2, message, (size_t)n);
    abort();
}

static void sidecar(char *out, size_t size, const TrackedFile *file, const char *suffix) {
    snprintf(out, size, "%s/%s.%s", logDirectory, file->name, suffix);
}

static void writeAll(int fd, const void *bytes, size_t count, off_t offset, const char *path) {
    const char *p = bytes;
    while (count > 0) {
        ssize_t n = real_pwrite(fd, p, count, offset);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail("cannot write", path);
        p += n;
        count -= (size_t)n;
        offset += n;
    }
}

static void appendAll(int fd, const void *bytes, size_t count, const char *path) {
    off_t end = lseek(fd, 0, SEEK_END);
    if (end < 0) fail("cannot seek", path);
    writeAll(fd, bytes, count, end, path);
}

static void copyFile(const char *from, const char *to) {
    int in = real_open(from, O_RDONLY | O_CLOEXEC);
    int out = real_open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) fail("cannot create", to);
    if (in >= 0) {
        char buffer[65536];
        off_t offset = 0;
        for (;;) {
            ssize_t n = read(in, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) fail("cannot read", from);
            if (n == 0) break;
            writeAll(out, buffer, (size_t)n, offset, to);
            offset += n;
        }
        real_close(in);
    }
    real_close(out);
}

// The file at `path` becomes tracked; its content now is taken as durable
// (it was there before this process touched it).
static int track(const char *path) {
    for (int i = 0; i < fileCount; i++)
        if (strcmp(files[i].path, path) == 0) return i;
    if (fileCount == MAX_FILES) { errno = EMFILE; fail("too many tracked files at", path); }
    TrackedFile *file = &files[fileCount];
    snprintf(file->path, sizeof file->path, "%s", path);
    const char *slash = strrchr(path, '/');
    snprintf(file->name, sizeof file->name, "%s", slash ? slash + 1 : path);
    char durable[4400], pending[4400];
    sidecar(durable, sizeof durable, file, "durable");
    sidecar(pending, sizeof pending, file, "pending");
    if (access(durable, F_OK) != 0) copyFile(path, durable);
    int fd = real_open(pending, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) fail("cannot create", pending);
    real_close(fd);
    return fileCount++;
}

static int isTracked(const char *path) {
    if (!ready || !path) return 0;
    size_t n = strlen(trackedPrefix);
    if (strncmp(path, trackedPrefix, n) != 0) return 0;
    size_t length = strlen(path);
    return !(length >= 4 && strcmp(path + length - 4, "-shm") == 0);
}

// Before the real open: a file seen for the first time gets its durable
// image from what is on disk now (an O_TRUNC must not have emptied it yet).
static int beforeOpen(const char *path, int *existed) {
    if (!isTracked(path)) return -1;
    *existed = access(path, F_OK) == 0;
    pthread_mutex_lock(&lock);
    int index = track(path);
    pthread_mutex_unlock(&lock);
    return index;
}

static void logOperation(TrackedFile *file, char kind, int64_t offset, const void *bytes, int64_t length);

static void forget(const char *path);

// After the real open: a descriptor of a tracked file is followed; a failed
// open of a file that did not exist (SQLite probing for a -journal) leaves no
// record, or the cut would create a file that never was.
static void afterOpen(int fd, int index, int flags, int existed, const char *path) {
    if (index < 0) return;
    if (fd < 0) {
        if (!existed) forget(path);
        return;
    }
    if (fd >= MAX_FDS) { errno = EMFILE; fail("descriptor out of range for", files[index].path); }
    pthread_mutex_lock(&lock);
    fdFile[fd] = (signed char)(index + 1);
    if (flags & O_TRUNC) logOperation(&files[index], 'T', 0, NULL, 0);
    pthread_mutex_unlock(&lock);
}

// A tracked file was deleted: forget it (its sidecars too), so the cut
// leaves it deleted and a new file of that name starts a fresh record.
static void forget(const char *path) {
    if (!isTracked(path)) return;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < fileCount; i++) {
        if (strcmp(files[i].path, path) != 0) continue;
        char durable[4400], pending[4400];
        sidecar(durable, sizeof durable, &files[i], "durable");
        sidecar(pending, sizeof pending, &files[i], "pending");
        char syncing[4400];
        sidecar(syncing, sizeof syncing, &files[i], "syncing");
        real_unlink(durable);
        real_unlink(pending);
        real_unlink(syncing);
        // Remove entry i by moving the last entry into its place.
        for (int fd = 0; fd < MAX_FDS; fd++) {
            if (fdFile[fd] == i + 1) fdFile[fd] = 0;
            else if (fdFile[fd] == fileCount) fdFile[fd] = (signed char)(i + 1);
        }
        files[i] = files[fileCount - 1];
        fileCount--;
        break;
    }
    pthread_mutex_unlock(&lock);
}

static TrackedFile *trackedFile(int fd) {
    if (fd < 0 || fd >= MAX_FDS || fdFile[fd] == 0) return NULL;
    return &files[fdFile[fd] - 1];
}

// Pending log record: 'W' offset length bytes… | 'T' size 0
static void logOperation(TrackedFile *file, char kind, int64_t offset, const void *bytes, int64_t length) {
    char pending[4400];
    sidecar(pending, sizeof pending, file, "pending");
    int fd = real_open(pending, O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail("cannot open", pending);
    char header[17];
    header[0] = kind;
    memcpy(header + 1, &offset, 8);
    memcpy(header + 9, &length, 8);
    appendAll(fd, header, sizeof header, pending);
    if (kind == 'W' && length > 0) appendAll(fd, bytes, (size_t)length, pending);
    real_close(fd);
}

// A sync returned: everything pending for this file is now durable.
static void synced(TrackedFile *file) {
    char pending[4400], durable[4400], syncing[4400];
    sidecar(pending, sizeof pending, file, "pending");
    sidecar(durable, sizeof durable, file, "durable");
    sidecar(syncing, sizeof syncing, file, "syncing");
    // Atomically: the pending writes become "syncing" (all durable: the cut
    // applies them in full if the process dies before they are in the
    // image), and a new empty pending log starts.
    if (rename(pending, syncing) != 0) fail("cannot rename", pending);
    int fresh = real_open(pending, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fresh < 0) fail("cannot create", pending);
    real_close(fresh);
    int log = real_open(syncing, O_RDONLY | O_CLOEXEC);
    int image = real_open(durable, O_WRONLY | O_CLOEXEC);
    if (log < 0) fail("cannot open", syncing);
    if (image < 0) fail("cannot open", durable);
    struct stat st;
    if (fstat(log, &st) != 0) fail("cannot stat", syncing);
    char *all = malloc((size_t)st.st_size + 1);
    if (!all) fail("out of memory replaying", syncing);
    off_t got = 0;
    while (got < st.st_size) {
        ssize_t n = pread(log, all + got, (size_t)(st.st_size - got), got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail("cannot read", syncing);
        got += n;
    }
    for (off_t at = 0; at + 17 <= st.st_size;) {
        int64_t offset, length;
        memcpy(&offset, all + at + 1, 8);
        memcpy(&length, all + at + 9, 8);
        if (all[at] == 'W') {
            writeAll(image, all + at + 17, (size_t)length, (off_t)offset, durable);
            at += 17 + length;
        } else {
            if (real_ftruncate(image, (off_t)offset) != 0) fail("cannot truncate", durable);
            at += 17;
        }
    }
    free(all);
    real_close(log);
    real_close(image);
    if (real_unlink(syncing) != 0) fail("cannot remove", syncing);
}

static mode_t modeArgument(int flags, va_list ap) {
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

// Every flavour of open: a path of ours (absolute, or relative to the
// working directory) is tracked from the moment it opens.
static int openTracked(int dirfd, const char *path, int flags, mode_t mode) {
    int existed = 0;
    int index = (dirfd == AT_FDCWD || path[0] == '/') ? beforeOpen(path, &existed) : -1;
    int fd = real_openat(dirfd, path, flags, mode);
    afterOpen(fd, index, flags, existed, path);
    return fd;
}

int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = modeArgument(flags, ap);
    va_end(ap);
    return openTracked(AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = modeArgument(flags, ap);
    va_end(ap);
    return openTracked(AT_FDCWD, path, flags | O_LARGEFILE, mode);
}

int openat(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = modeArgument(flags, ap);
    va_end(ap);
    return openTracked(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = modeArgument(flags, ap);
    va_end(ap);
    return openTracked(dirfd, path, flags | O_LARGEFILE, mode);
}

int close(int fd) {
    if (fd >= 0 && fd < MAX_FDS && fdFile[fd]) {
        pthread_mutex_lock(&lock);
        fdFile[fd] = 0;
        pthread_mutex_unlock(&lock);
    }
    return real_close(fd);
}

// The tracked file behind `fd`, with the lock held; NULL (lock not held)
// when `fd` is not tracked. Looked up under the lock: forget() may move
// entries of the table.
static TrackedFile *lockTracked(int fd) {
    if (!trackedFile(fd)) return NULL;
    pthread_mutex_lock(&lock);
    TrackedFile *file = trackedFile(fd);
    if (!file) pthread_mutex_unlock(&lock);
    return file;
}

ssize_t pwrite(int fd, const void *bytes, size_t count, off_t offset) {
    TrackedFile *file = lockTracked(fd);
    if (!file) return real_pwrite(fd, bytes, count, offset);
    ssize_t n = real_pwrite(fd, bytes, count, offset);
    if (n > 0) logOperation(file, 'W', offset, bytes, n);
    pthread_mutex_unlock(&lock);
    return n;
}

ssize_t pwrite64(int fd, const void *bytes, size_t count, off64_t offset) {
    TrackedFile *file = lockTracked(fd);
    if (!file) return real_pwrite64(fd, bytes, count, offset);
    ssize_t n = real_pwrite64(fd, bytes, count, offset);
    if (n > 0) logOperation(file, 'W', offset, bytes, n);
    pthread_mutex_unlock(&lock);
    return n;
}

ssize_t write(int fd, const void *bytes, size_t count) {
    TrackedFile *file = lockTracked(fd);
    if (!file) return real_write(fd, bytes, count);
    off_t offset = lseek(fd, 0, SEEK_CUR);
    ssize_t n = real_write(fd, bytes, count);
    if (n > 0) logOperation(file, 'W', offset, bytes, n);
    pthread_mutex_unlock(&lock);
    return n;
}

int ftruncate(int fd, off_t size) {
    TrackedFile *file = lockTracked(fd);
    if (!file) return real_ftruncate(fd, size);
    int r = real_ftruncate(fd, size);
    if (r == 0) logOperation(file, 'T', size, NULL, 0);
    pthread_mutex_unlock(&lock);
    return r;
}

int ftruncate64(int fd, off64_t size) {
    TrackedFile *file = lockTracked(fd);
    if (!file) return real_ftruncate64(fd, size);
    int r = real_ftruncate64(fd, size);
    if (r == 0) logOperation(file, 'T', size, NULL, 0);
    pthread_mutex_unlock(&lock);
    return r;
}

// A sync that returned makes everything pending for the file durable. The
// optional delay (a slow disk) comes first, outside the lock, so other
// threads go on writing meanwhile.
static int syncTracked(int fd, int (*sync)(int)) {
    if (!trackedFile(fd)) return sync(fd);
    if (syncDelay) usleep(syncDelay);
    TrackedFile *file = lockTracked(fd);
    if (!file) return sync(fd);
    int r = sync(fd);
    if (r == 0) synced(file);
    pthread_mutex_unlock(&lock);
    return r;
}

int fsync(int fd) { return syncTracked(fd, real_fsync); }

int fdatasync(int fd) { return syncTracked(fd, real_fdatasync); }

int unlink(const char *path) {
    int r = real_unlink(path);
    if (r == 0) forget(path);
    return r;
}

int unlinkat(int dirfd, const char *path, int flags) {
    int r = real_unlinkat(dirfd, path, flags);
    if (r == 0 && path[0] == '/') forget(path);
    return r;
}
