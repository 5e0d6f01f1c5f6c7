/* powercut.c: an LD_PRELOAD shim that keeps what a power cut would leave of a state directory.
 *
 * Every process of a server's run loads it (git inherits LD_PRELOAD). It follows the flushes
 * (fsync, fdatasync, sync, syncfs) of files under $POWERCUT_STATE and keeps, in $POWERCUT_IMAGE,
 * the "durable image": what the disk would hold after a power cut at that moment.
 * tests/harness/power_cut.py cuts the power and builds the state directory back from the image.
 *
 * The model: ext4 with data=ordered (its default), and nothing counted that ext4 only may do.
 *  - Data. A file's bytes are durable at its fsync or fdatasync: the image takes the bytes the file
 *    holds at the call. Nothing else writes them back (the kernel does within seconds, but nobody
 *    can count on it): a file never flushed is empty after the cut, a file written over since its
 *    last flush has the bytes of that flush.
 *  - Names (create, rename, link, unlink, mkdir, rmdir, chmod) are metadata, which ext4 keeps in
 *    one journal, committed in order: a commit makes every name change made before it durable,
 *    anywhere on the file system. An fsync commits it (ext4 does when the file or directory changed
 *    since the last commit; we take it as always, a little kinder for an unchanged one), an
 *    fdatasync only when the file's size changed since its last flush (ext4 does not commit for a
 *    write within the old size). At a commit the image takes the names of the whole tree as they
 *    are at the call (each directory read twice: see names_in).
 *    So a new name is durable at an fsync of its directory (POSIX's rule) or of the new file itself
 *    (ext4's), and git's renames (git never fsyncs a directory) at the next commit of anything;
 *    a strict POSIX model would lose them, and would fail a server ext4 keeps whole.
 *  - sync() and syncfs() flush every file's bytes and commit. sync_file_range and msync flush no
 *    disk cache and commit nothing: they count for nothing.
 *  - Not modelled, each of which only keeps more: ext4's commit every 5 s and write-back after 30 s,
 *    auto_da_alloc (a file renamed over another has its bytes written at the commit). A file cut
 *    short (ftruncate) keeps its flushed bytes until it is flushed again.
 *  - A flush is taken into the image before the real one: what other threads write meanwhile
 *    does not count (it may not be on disk when the flush returns).
 *
 * The image ($POWERCUT_IMAGE):
 *   data/KEY   the bytes of the file KEY (its inode number and birth time) at its last flush
 *   names      the tree at the last commit, a record per entry of four NUL-ended fields:
 *              TYPE (d, f or l), MODE (octal), KEY (for l: the link's target), PATH (relative)
 *   lock       flock'ed around every update; the harness takes it to cut the power
 *   off        made by the harness at the cut: a flush from then on never returns
 *   flushes    a byte per flush of the state directory (its size: how many so far)
 * POWERCUT_DROP=TEXT: a flush of a path containing TEXT counts for nothing (the server then behaves
 * as one that skips it), so a test can be shown to catch the loss.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_syncfs)(int);
static void (*real_sync)(void);
static const char *state, *image, *drop;

__attribute__((constructor)) static void setup(void) {
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_syncfs = dlsym(RTLD_NEXT, "syncfs");
    real_sync = dlsym(RTLD_NEXT, "sync");
    state = getenv("POWERCUT_STATE");
    image = getenv("POWERCUT_IMAGE");
    drop = getenv("POWERCUT_DROP");
    if (drop && !*drop)
        drop = NULL;
}

static void image_path(char *buf, const char *name) { snprintf(buf, PATH_MAX, "%s/%s", image, name); }

/* Where fd points, if under the state directory (its own path, or a path below it). */
static int state_path(int fd, char *buf) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, PATH_MAX - 1);
    if (n < 0)
        return 0;
    buf[n] = 0;
    size_t len = strlen(state);
    return strncmp(buf, state, len) == 0 && (buf[len] == '/' || buf[len] == 0);
}

static void key_of(const struct statx *st, char *key) {
    snprintf(key, 64, "%llx-%llx.%x", (unsigned long long)st->stx_ino,
             (unsigned long long)st->stx_btime.tv_sec, st->stx_btime.tv_nsec);
}

static int copy_all(int from, int to) {
    char buf[65536];
    ssize_t n;
    while ((n = read(from, buf, sizeof buf)) > 0)
        for (char *p = buf; n > 0;) {
            ssize_t w = write(to, p, n);
            if (w < 0)
                return -1;
            p += w, n -= w;
        }
    return n < 0 ? -1 : 0;
}

/* The file's bytes into data/KEY (through a temporary file: a process killed meanwhile leaves the old). */
static void save_data(int fd, const char *key) {
    char link[64], tmp[PATH_MAX], name[PATH_MAX], dest[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd); /* fd may be write-only: open the file again */
    snprintf(name, sizeof name, "data/%s", key);
    image_path(dest, name);
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", dest, (int)getpid());
    int from = open(link, O_RDONLY | O_CLOEXEC);
    if (from < 0)
        return;
    int to = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (to >= 0 && copy_all(from, to) == 0 && close(to) == 0)
        rename(tmp, dest);
    else if (to >= 0)
        unlink(tmp);
    close(from);
}

static void record(FILE *out, char type, unsigned mode, const char *key, const char *path) {
    fprintf(out, "%c%c%o%c%s%c%s%c", type, 0, mode & 07777, 0, key, 0, path, 0);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The names in dir, read twice: a rename while readdir runs may hide a name from one reading (the journal
 * commits a rename whole, a snapshot by readdir does not), not from both. NULL-ended, sorted, no repeats. */
static char **names_in(DIR *dir) {
    size_t n = 0, cap = 64;
    char **names = malloc(cap * sizeof *names);
    for (int pass = 0; pass < 2 && names; pass++, rewinddir(dir))
        for (struct dirent *e; (e = readdir(dir));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            if (n + 1 == cap && !(names = realloc(names, (cap *= 2) * sizeof *names)))
                return NULL;
            names[n++] = strdup(e->d_name);
        }
    if (!names)
        return NULL;
    qsort(names, n, sizeof *names, by_name);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (kept && !strcmp(names[kept - 1], names[i]))
            free(names[i]);
        else
            names[kept++] = names[i];
    names[kept] = NULL;
    return names;
}

/* The names under the directory dirfd (at PATH rel) into out; with all_data, every file's bytes too. */
static void walk(int dirfd, const char *rel, FILE *out, int all_data) {
    DIR *dir = fdopendir(dirfd);
    char **names = dir ? names_in(dir) : NULL;
    for (char **name = names; name && *name; free(*name++)) {
        struct statx st;
        char path[PATH_MAX], key[PATH_MAX];
        if (statx(dirfd, *name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME, &st) != 0)
            continue; /* gone meanwhile */
        snprintf(path, sizeof path, "%s%s%s", rel, *rel ? "/" : "", *name);
        if (S_ISDIR(st.stx_mode)) {
            record(out, 'd', st.stx_mode, "-", path);
            int sub = openat(dirfd, *name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                walk(sub, path, out, all_data);
        } else if (S_ISREG(st.stx_mode)) {
            key_of(&st, key);
            record(out, 'f', st.stx_mode, key, path);
            int fd = all_data ? openat(dirfd, *name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
            if (fd >= 0) {
                save_data(fd, key);
                close(fd);
            }
        } else if (S_ISLNK(st.stx_mode)) {
            ssize_t n = readlinkat(dirfd, *name, key, sizeof key - 1);
            if (n >= 0) {
                key[n] = 0;
                record(out, 'l', 0777, key, path);
            }
        } /* sockets and fifos hold nothing durable */
    }
    free(names);
    if (dir)
        closedir(dir);
    else
        close(dirfd);
}

/* A journal commit: the names of the whole tree as they are now. */
static void commit(int all_data) {
    char tmp[PATH_MAX], dest[PATH_MAX];
    struct statx st;
    image_path(dest, "names");
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", dest, (int)getpid());
    int root = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    FILE *out = fopen(tmp, "we");
    if (root < 0 || !out || statx(root, "", AT_EMPTY_PATH, STATX_MODE, &st) != 0) {
        if (root >= 0)
            close(root);
        if (out)
            fclose(out), unlink(tmp);
        return;
    }
    record(out, 'd', st.stx_mode, "-", "");
    walk(root, "", out, all_data);
    if (fclose(out) == 0)
        rename(tmp, dest);
    else
        unlink(tmp);
}

/* Under the image's lock: returns the lock's fd, or -1. Once the power is off a flush never returns
 * (the harness kills the process): nothing answered after the cut can have counted on one. */
static int power_on(void) {
    char path[PATH_MAX];
    image_path(path, "lock");
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    image_path(path, "off");
    if (access(path, F_OK) == 0)
        for (close(fd);;)
            pause();
    return fd;
}

/* One more byte in "flushes": the harness waits for the server to stop flushing (its quiet moments). */
static void count(void) {
    char path[PATH_MAX];
    image_path(path, "flushes");
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ssize_t ignored = write(fd, ".", 1); /* a count short by one only makes a wait longer */
        (void)ignored;
        close(fd);
    }
}

/* What a flush of fd makes durable (called before the real flush: it covers what was written before). */
static void flushed(int fd, int datasync) {
    char path[PATH_MAX], key[64], name[PATH_MAX], saved[PATH_MAX];
    struct statx st, before;
    if (!state || !image || !state_path(fd, path))
        return;
    count();
    if (drop && strstr(path, drop))
        return;
    int lock = power_on();
    if (lock < 0)
        return;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, &st) == 0) {
        int journal = 1;
        if (S_ISREG(st.stx_mode)) {
            key_of(&st, key);
            snprintf(name, sizeof name, "data/%s", key);
            image_path(saved, name);
            if (datasync && statx(AT_FDCWD, saved, 0, STATX_SIZE, &before) == 0)
                journal = before.stx_size != st.stx_size;
            save_data(fd, key);
        }
        if (journal)
            commit(0);
    }
    close(lock);
}

/* Exported for the harness: the image of a state directory all on disk (a server's start). */
int powercut_sync_all(const char *state_dir, const char *image_dir) {
    state = state_dir, image = image_dir;
    int lock = power_on();
    if (lock < 0)
        return -1;
    commit(1);
    close(lock);
    return 0;
}

int fsync(int fd) {
    flushed(fd, 0);
    return real_fsync(fd);
}

int fdatasync(int fd) {
    flushed(fd, 1);
    return real_fdatasync(fd);
}

int syncfs(int fd) {
    struct stat fs, dir;
    int lock = state && image && fstat(fd, &fs) == 0 && stat(state, &dir) == 0 && fs.st_dev == dir.st_dev
               ? power_on() : -1;
    if (lock >= 0) { /* the state directory's file system: all of it */
        commit(1);
        close(lock);
    }
    return real_syncfs(fd);
}

void sync(void) {
    int lock = state && image ? power_on() : -1;
    if (lock >= 0) {
        commit(1);
        close(lock);
    }
    real_sync();
}
