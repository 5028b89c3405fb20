/* iotrace: an LD_PRELOAD library that records what a process writes to the
 * files of one directory, and when it flushes them, so that a test can
 * rebuild every disk a power cut could have left (tests/store/powerloss).
 *
 * IOTRACE_DIR names the directory (absolute, resolved); IOTRACE_LOG the
 * trace file.  Each event is appended to the trace as
 *     kind u8 | name length u8 | name | offset u64 | length u64 | data
 * with kind 'W' (bytes written at offset), 'S' (fsync or fdatasync of the
 * file), 'T' (ftruncate to offset) or 'D' (a write through a descriptor
 * opened O_SYNC/O_DSYNC: on stable storage when the call returns), or 'L'
 * (a hard link made: the event names the new entry, its data the file
 * linked).  Names are relative to the directory, which is itself ".", so
 * that its fsync (what makes a new entry durable) is seen too; files in
 * its subdirectories are traced with their relative paths.  Kind 'R' is
 * an msync(MS_SYNC) of part of a mapped file: the pages of [offset,
 * offset + length) flushed (no data).
 *
 * Writes through a shared writable map of a traced file (the store's batch
 * written in place, MDB_WRITEMAP) are seen before the next traced call of
 * any file (a write, flush, truncation, link, msync or unmap): the map is
 * compared page by page with a copy taken when it was mapped (and at each
 * such call since), and each page that changed is recorded as a 'W' of its
 * content then, before that call's event.  So a page of a map is in the
 * trace no later than the next call in the order of the process's calls,
 * in the version it had then; a page changed twice between two calls is
 * recorded in its last version only.  A traced map unmapped or mapped over
 * in part, or moved (mremap), aborts the process: it would not be followed.
 * A shared map of a traced file that cannot be written through is followed
 * for its msync only (Linux's msync flushes that range of the file, whichever
 * map wrote its pages): it has no copy, and records no writes.
 * IOTRACE_MAPS=0 hides the maps, their writes and msyncs (the harness's
 * control: a store that writes in place then loses data).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FD 4096

static char traced_dir[PATH_MAX];
static size_t traced_len;
static int trace_fd = -1;
static char *names[MAX_FD];   /* file name (relative to the directory) of a traced fd */
static int synchronous[MAX_FD];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_close)(int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_ftruncate)(int, off_t);
static int (*real_linkat)(int, const char *, int, const char *, int);

__attribute__((constructor)) static void init(void) {
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite64");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_pwritev = dlsym(RTLD_NEXT, "pwritev64");
    real_open = dlsym(RTLD_NEXT, "open64");
    real_openat = dlsym(RTLD_NEXT, "openat64");
    real_close = dlsym(RTLD_NEXT, "close");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_ftruncate = dlsym(RTLD_NEXT, "ftruncate64");
    real_linkat = dlsym(RTLD_NEXT, "linkat");
    const char *dir = getenv("IOTRACE_DIR"), *log = getenv("IOTRACE_LOG");
    if (!dir || !log)
        return;
    strncpy(traced_dir, dir, sizeof traced_dir - 2);
    traced_len = strlen(traced_dir);
    if (traced_len && traced_dir[traced_len - 1] != '/')
        traced_dir[traced_len++] = '/';
    trace_fd = real_open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

static void put(const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t w = real_write(trace_fd, c, n);
        if (w <= 0) {
            if (w < 0 && errno == EINTR)
                continue;
            abort(); /* a trace with a hole would prove nothing */
        }
        c += w;
        n -= (size_t)w;
    }
}

/* One event; its data, up to length bytes, from iov (none without one).  The caller holds lock. */
static void put_event(char kind, const char *name, uint64_t offset, const struct iovec *iov, int iovcnt,
                      uint64_t length) {
    uint8_t n = (uint8_t)strlen(name);
    put(&kind, 1);
    put(&n, 1);
    put(name, n);
    put(&offset, 8);
    put(&length, 8);
    for (int i = 0; i < iovcnt && length; i++) {
        size_t part = iov[i].iov_len < length ? iov[i].iov_len : length;
        put(iov[i].iov_base, part);
        length -= part;
    }
}

static void record_all_maps(void);

/* An event of a call other than one through a map: the maps' changes come first, for the
 * kernel may have written them back by then (a page of a map is on disk no later than in
 * the order of the calls around it). */
static void named_event(char kind, const char *name, uint64_t offset, const struct iovec *iov, int iovcnt,
                        uint64_t length) {
    pthread_mutex_lock(&lock);
    record_all_maps();
    put_event(kind, name, offset, iov, iovcnt, length);
    pthread_mutex_unlock(&lock);
}

static void event(char kind, int fd, uint64_t offset, const struct iovec *iov, int iovcnt, uint64_t length) {
    named_event(kind, names[fd], offset, iov, iovcnt, length);
}

/* The name of ``path`` relative to the traced directory ("." for the
 * directory itself), or NULL when it lies outside. */
static const char *relative(const char *path) {
    if (strlen(path) + 1 == traced_len && strncmp(path, traced_dir, traced_len - 1) == 0)
        return ".";
    if (strlen(path) > traced_len && strncmp(path, traced_dir, traced_len) == 0)
        return path + traced_len;
    return NULL;
}

static int traced(int fd) { return trace_fd >= 0 && fd >= 0 && fd < MAX_FD && names[fd]; }

static void remember(int fd, int flags) {
    char link[64], path[PATH_MAX];
    if (trace_fd < 0 || fd < 0 || fd >= MAX_FD)
        return;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return;
    path[n] = 0;
    const char *name = relative(path);
    pthread_mutex_lock(&lock);
    free(names[fd]);
    names[fd] = NULL;
    if (name) {
        names[fd] = strdup(name);
        synchronous[fd] = (flags & (O_SYNC | O_DSYNC)) != 0;
    }
    pthread_mutex_unlock(&lock);
}

int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = va_arg(ap, mode_t);
    va_end(ap);
    int fd = real_open(path, flags, mode);
    remember(fd, flags);
    return fd;
}
int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int openat(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = va_arg(ap, mode_t);
    va_end(ap);
    int fd = real_openat(dirfd, path, flags, mode);
    remember(fd, flags);
    return fd;
}
int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

int close(int fd) {
    if (fd >= 0 && fd < MAX_FD) {
        pthread_mutex_lock(&lock);
        free(names[fd]);
        names[fd] = NULL;
        pthread_mutex_unlock(&lock);
    }
    return real_close(fd);
}

static void written(int fd, off_t at, const struct iovec *iov, int iovcnt, ssize_t n) {
    if (n > 0 && traced(fd))
        event(synchronous[fd] ? 'D' : 'W', fd, (uint64_t)at, iov, iovcnt, (uint64_t)n);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    ssize_t n = real_pwrite(fd, buf, count, offset);
    struct iovec iov = {(void *)buf, count};
    written(fd, offset, &iov, 1, n);
    return n;
}
ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) __attribute__((alias("pwrite")));

ssize_t write(int fd, const void *buf, size_t count) {
    off_t at = traced(fd) ? lseek(fd, 0, SEEK_CUR) : 0;
    ssize_t n = real_write(fd, buf, count);
    struct iovec iov = {(void *)buf, count};
    written(fd, at, &iov, 1, n);
    return n;
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    off_t at = traced(fd) ? lseek(fd, 0, SEEK_CUR) : 0;
    ssize_t n = real_writev(fd, iov, iovcnt);
    written(fd, at, iov, iovcnt, n);
    return n;
}

ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    ssize_t n = real_pwritev(fd, iov, iovcnt, offset);
    written(fd, offset, iov, iovcnt, n);
    return n;
}
ssize_t pwritev64(int fd, const struct iovec *iov, int iovcnt, off_t offset) __attribute__((alias("pwritev")));

/* -- writes through shared writable maps ------------------------------- */

#define MAX_MAPS 64
#define PAGE 4096
struct mapping {
    char *addr;      /* NULL: a free slot */
    size_t length;
    off_t offset;    /* of the map in the file */
    char *name;      /* the file's name, as in the events */
    int fd;          /* a duplicate of the mapped descriptor: the file's size at each look */
    char *copy;      /* the map's pages as last recorded; NULL: a read-only map, for its msync */
};
static struct mapping maps[MAX_MAPS];
static int maps_traced = 1;
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static int (*real_msync)(void *, size_t, int);
static void *(*real_mremap)(void *, size_t, size_t, int, ...);
static void forget_maps_in_child(void);

__attribute__((constructor)) static void init_maps(void) {
    real_mmap = dlsym(RTLD_NEXT, "mmap64");
    real_munmap = dlsym(RTLD_NEXT, "munmap");
    real_msync = dlsym(RTLD_NEXT, "msync");
    real_mremap = dlsym(RTLD_NEXT, "mremap");
    pthread_atfork(NULL, NULL, forget_maps_in_child);
    const char *on = getenv("IOTRACE_MAPS");
    maps_traced = !(on && strcmp(on, "0") == 0);
}

/* The bytes of mapping m that lie within its file now (a page past the end
 * would be a SIGBUS to read). */
static size_t mapped_in_file(const struct mapping *m) {
    struct stat st;
    if (fstat(m->fd, &st) != 0)
        abort(); /* the map's file is out of sight: a trace with a hole */
    if (st.st_size <= m->offset)
        return 0;
    size_t in_file = (size_t)(st.st_size - m->offset);
    return in_file < m->length ? in_file : m->length;
}

/* Record each page of [from, to) of mapping m that changed since it was
 * last recorded, as a write of its content now.  The caller holds lock. */
static void record_changes(struct mapping *m, size_t from, size_t to) {
    if (!m->copy)
        return; /* read-only: nothing is written through it */
    size_t end = mapped_in_file(m);
    if (to > end)
        to = end;
    for (size_t at = from - from % PAGE; at < to; at += PAGE) {
        size_t n = to - at < PAGE ? to - at : PAGE;
        if (memcmp(m->addr + at, m->copy + at, n) == 0)
            continue;
        memcpy(m->copy + at, m->addr + at, n);
        struct iovec page = {m->copy + at, n};
        put_event('W', m->name, (uint64_t)(m->offset + (off_t)at), &page, 1, n);
    }
}

static void forget(struct mapping *m) {
    free(m->copy);
    free(m->name);
    real_close(m->fd);
    memset(m, 0, sizeof *m);
}

/* Every page of every map that changed since it was last recorded.  The caller holds lock. */
static void record_all_maps(void) {
    for (int i = 0; i < MAX_MAPS; i++)
        if (maps[i].addr)
            record_changes(&maps[i], 0, maps[i].length);
}

/* [addr, addr + length) is being unmapped or mapped over: the maps within it are recorded
 * and forgotten; a map it covers only in part would leave a copy the tracer cannot follow.
 * The caller holds lock. */
static void release_range(char *addr, size_t length) {
    for (int i = 0; i < MAX_MAPS; i++) {
        struct mapping *m = &maps[i];
        if (!m->addr || m->addr >= addr + length || m->addr + m->length <= addr)
            continue;
        if (m->addr < addr || m->addr + m->length > addr + length)
            abort(); /* part of a traced map unmapped or replaced: not followed */
        record_changes(m, 0, m->length); /* written, not flushed: the kernel writes them back later */
        forget(m);
    }
}

void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) {
    if (flags & MAP_FIXED) {
        pthread_mutex_lock(&lock);
        release_range(addr, length);
        pthread_mutex_unlock(&lock);
    }
    char *p = real_mmap(addr, length, prot, flags, fd, offset);
    if (p == MAP_FAILED || !maps_traced || !(flags & MAP_SHARED))
        return p;
    int writable = (prot & PROT_WRITE) != 0;
    pthread_mutex_lock(&lock);
    if (!traced(fd)) {
        pthread_mutex_unlock(&lock);
        return p;
    }
    struct mapping *m = NULL;
    for (int i = 0; i < MAX_MAPS && !m; i++)
        if (!maps[i].addr)
            m = &maps[i];
    if (!m)
        abort(); /* an untraced map would hide writes */
    *m = (struct mapping){p, length, offset, strdup(names[fd]), fcntl(fd, F_DUPFD_CLOEXEC, 0),
                          writable ? calloc(1, length) : NULL};
    if (!m->name || m->fd < 0 || (writable && !m->copy))
        abort();
    if (writable) {
        size_t n = mapped_in_file(m); /* what the file holds now is what a flush keeps */
        memcpy(m->copy, p, n);
    }
    pthread_mutex_unlock(&lock);
    return p;
}
void *mmap64(void *addr, size_t length, int prot, int flags, int fd, off_t offset) __attribute__((alias("mmap")));

int munmap(void *addr, size_t length) {
    pthread_mutex_lock(&lock);
    release_range(addr, length);
    pthread_mutex_unlock(&lock);
    return real_munmap(addr, length);
}

/* A traced map moved or resized is not followed (LMDB maps again instead). */
void *mremap(void *old, size_t old_size, size_t new_size, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    void *new_address = va_arg(ap, void *);
    va_end(ap);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_MAPS; i++)
        if (maps[i].addr && maps[i].addr < (char *)old + old_size && maps[i].addr + maps[i].length > (char *)old)
            abort();
    pthread_mutex_unlock(&lock);
    return real_mremap(old, old_size, new_size, flags, new_address);
}

int msync(void *addr, size_t length, int flags) {
    char *from = addr, *to = (char *)addr + length;
    pthread_mutex_lock(&lock);
    record_all_maps(); /* this range's pages, and the others' as the order of calls has them */
    pthread_mutex_unlock(&lock);
    int rc = real_msync(addr, length, flags);
    if (rc != 0 || !(flags & MS_SYNC))
        return rc;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_MAPS; i++) {
        struct mapping *m = &maps[i];
        if (!m->addr || from >= m->addr + m->length || to <= m->addr)
            continue;
        char *start = from > m->addr ? from : m->addr, *stop = to < m->addr + m->length ? to : m->addr + m->length;
        /* the range's length in the length field, and no data (no iov) */
        put_event('R', m->name, (uint64_t)(m->offset + (start - m->addr)), NULL, 0, (uint64_t)(stop - start));
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* At exit, pages written through a map and never flushed nor unmapped are
 * still written back by the kernel: they are versions a disk may hold. */
__attribute__((destructor)) static void record_maps_at_exit(void) {
    pthread_mutex_lock(&lock);
    record_all_maps();
    pthread_mutex_unlock(&lock);
}

/* A child of fork() without exec does not own its parent's maps: it records none of them. */
static void forget_maps_in_child(void) {
    memset(maps, 0, sizeof maps);
    pthread_mutex_init(&lock, NULL);
}

static int synced(int fd, int rc) {
    if (rc == 0 && traced(fd))
        event('S', fd, 0, NULL, 0, 0);
    return rc;
}
/* A flush keeps what the file's maps hold at its start: recorded before the call. */
static void record_before_flush(int fd) {
    pthread_mutex_lock(&lock);
    if (traced(fd))
        record_all_maps();
    pthread_mutex_unlock(&lock);
}
int fsync(int fd) {
    record_before_flush(fd);
    return synced(fd, real_fsync(fd));
}
int fdatasync(int fd) {
    record_before_flush(fd);
    return synced(fd, real_fdatasync(fd));
}

int ftruncate(int fd, off_t length) {
    int rc = real_ftruncate(fd, length);
    if (rc == 0 && traced(fd))
        event('T', fd, (uint64_t)length, NULL, 0, 0);
    return rc;
}
int ftruncate64(int fd, off_t length) __attribute__((alias("ftruncate")));

int linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags) {
    int rc = real_linkat(olddirfd, oldpath, newdirfd, newpath, flags);
    char from[PATH_MAX], to[PATH_MAX];
    /* Resolved after the fact (the paths the store passes are absolute or
     * relative to the working directory). */
    if (rc == 0 && trace_fd >= 0 && olddirfd == AT_FDCWD && newdirfd == AT_FDCWD
        && realpath(oldpath, from) && realpath(newpath, to)) {
        const char *source = relative(from), *target = relative(to);
        if (source && target) {
            struct iovec iov = {(void *)source, strlen(source)};
            named_event('L', target, 0, &iov, 1, iov.iov_len);
        }
    }
    return rc;
}
int link(const char *oldpath, const char *newpath) { return linkat(AT_FDCWD, oldpath, AT_FDCWD, newpath, 0); }
