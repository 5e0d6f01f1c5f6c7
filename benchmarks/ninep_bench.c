/* ninep_bench: a small blocking 9P2000.L client that times one kind of work.

   Built by benchmarks/speed.py with `gcc -O2` into a cache directory; never
   committed as a binary. The same client drives anvilfs and diod, so the
   figures compare the servers, not two clients.

   usage: ninep_bench MODE SOCKET ANAME [options]
     MODE  read    walk(root -> PATH) + lopen + read to EOF + clunk
           null    walk clone (nwname 0) + clunk
           phased  -n sessions at once, pipelined by phase: all walks sent
                   in one write, then all replies read; then all lopens;
                   one read each; all clunks
     -p FMT   path for read/phased, '/'-separated; "%04d" takes the file
              number, 1.. -n (default s%04d/status)
     -n N     files or sessions (default 1000; phased: 100)
     -o K     first file number - 1 (round robin starts there; default 0)
     -s SECS  measure for SECS seconds (default 2)
     -c N     or stop after N operations (whichever comes first)
     -w SECS  warm up for SECS before measuring (default 0.2)
     -g       after the warm-up print "ready" and wait for a line on stdin,
              so a driver can start many clients together

   Output: one line, `result mode=... ops=N secs=S rate=R mean_us=M med_us=D
   p90_us=P p99_us=Q bytes=B` (per-operation wall times, CLOCK_MONOTONIC).
   Errors go to stderr with exit status 1. */

#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum {
	Tlopen = 12, Rlerror = 7, Tversion = 100, Tattach = 104, Rerror = 107,
	Twalk = 110, Tread = 116, Tclunk = 120,
	NOTAG = 0xffff, NOFID = 0xffffffffu, IOHDRSZ = 24, MSIZE = 65536 + IOHDRSZ,
	MAXPHASE = 1024,
};

static int fd;
static uint32_t msize = MSIZE;
static uint8_t *rbuf;          /* one reply frame */
static uint8_t *wbuf;          /* requests, up to MAXPHASE of them at once */
static size_t wlen;

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "ninep_bench: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- encoding */

static uint8_t *put(const void *p, size_t n) { memcpy(wbuf + wlen, p, n); wlen += n; return wbuf + wlen - n; }
static void p8(uint8_t v) { put(&v, 1); }
static void p16(uint16_t v) { put(&v, 2); }   /* 9P is little-endian, as is x86 */
static void p32(uint32_t v) { put(&v, 4); }
static void p64(uint64_t v) { put(&v, 8); }
static void pstr(const char *s) { p16(strlen(s)); put(s, strlen(s)); }

static size_t start;
static void begin(uint8_t type, uint16_t tag) { start = wlen; p32(0); p8(type); p16(tag); }
static void end(void) { uint32_t n = wlen - start; memcpy(wbuf + start, &n, 4); }

static void flush_requests(void)
{
	size_t off = 0;
	while (off < wlen) {
		ssize_t n = write(fd, wbuf + off, wlen - off);
		if (n < 0 && errno != EINTR)
			die("write: %s", strerror(errno));
		if (n > 0)
			off += n;
	}
	wlen = 0;
}

/* ---------------------------------------------------------------- decoding */

static void readn(uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t got = read(fd, p, n);
		if (got == 0)
			die("%s", "the server closed the connection");
		if (got < 0 && errno != EINTR)
			die("read: %s", strerror(errno));
		if (got > 0) {
			p += got;
			n -= got;
		}
	}
}

static uint16_t g16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t g32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* Read one reply; it must be of `type` (the R of the request). Returns its size. */
static uint32_t reply(uint8_t type, const char *what)
{
	readn(rbuf, 4);
	uint32_t size = g32(rbuf);
	if (size < 7 || size > msize)
		die("bad reply size to %s", what);
	readn(rbuf + 4, size - 4);
	if (rbuf[4] == Rlerror) {
		static char msg[64];
		snprintf(msg, sizeof msg, "%s: errno %u", what, g32(rbuf + 7));
		die("%s", msg);
	}
	if (rbuf[4] == Rerror)
		die("%s: Rerror (the server answered 9P2000, not 9P2000.L)", what);
	if (rbuf[4] != type)
		die("unexpected reply type to %s", what);
	return size;
}

/* ---------------------------------------------------------------- requests */

static char ***paths;   /* per file: its NULL-terminated walk names */

static void twalk(uint16_t tag, uint32_t fid, uint32_t newfid, char **names)
{
	int n = 0;
	while (names && names[n])
		n++;
	begin(Twalk, tag); p32(fid); p32(newfid); p16(n);
	for (int i = 0; i < n; i++)
		pstr(names[i]);
	end();
}

static void twalk_reply(char **names)
{
	int n = 0;
	while (names && names[n])
		n++;
	reply(Twalk + 1, "Twalk");
	if (g16(rbuf + 7) != n)
		die("walk to %s stopped short", n ? names[0] : "(clone)");
}

static void tlopen(uint16_t tag, uint32_t fid) { begin(Tlopen, tag); p32(fid); p32(0); end(); }
static void tclunk(uint16_t tag, uint32_t fid) { begin(Tclunk, tag); p32(fid); end(); }
static void tread(uint16_t tag, uint32_t fid, uint64_t off)
{
	begin(Tread, tag); p32(fid); p64(off); p32(msize - IOHDRSZ); end();
}

static void handshake(const char *aname)
{
	begin(Tversion, NOTAG); p32(MSIZE); pstr("9P2000.L"); end();
	flush_requests();
	reply(Tversion + 1, "Tversion");
	uint32_t m = g32(rbuf + 7);
	if (g16(rbuf + 11) != 8 || memcmp(rbuf + 13, "9P2000.L", 8) != 0)
		die("%s", "the server does not speak 9P2000.L");
	msize = m < MSIZE ? m : MSIZE;
	begin(Tattach, 0); p32(0); p32(NOFID); pstr("root"); pstr(aname); p32(0); end();
	flush_requests();
	reply(Tattach + 1, "Tattach");
}

static void dial(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof a.sun_path)
		die("socket path too long: %s", path);
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("connect: %s", strerror(errno));
}

/* ---------------------------------------------------------------- operations */

static int nfiles = 1000, first = 0;

/* One read operation on file i: returns the bytes read. */
static long op_read(int i)
{
	long total = 0;
	twalk(1, 0, 1, paths[i]); flush_requests(); twalk_reply(paths[i]);
	tlopen(1, 1); flush_requests(); reply(Tlopen + 1, "Tlopen");
	for (;;) {
		tread(1, 1, total); flush_requests(); reply(Tread + 1, "Tread");
		uint32_t n = g32(rbuf + 7);
		if (n == 0)
			break;
		total += n;
	}
	tclunk(1, 1); flush_requests(); reply(Tclunk + 1, "Tclunk");
	return total;
}

static long op_null(int i)
{
	(void)i;
	twalk(1, 0, 1, NULL); flush_requests(); twalk_reply(NULL);
	tclunk(1, 1); flush_requests(); reply(Tclunk + 1, "Tclunk");
	return 0;
}

/* All nfiles sessions at once, phase by phase; fid k+1 and tag k+1 for session k. */
static long op_phased(int i)
{
	long total = 0;
	(void)i;
	for (int k = 0; k < nfiles; k++) twalk(k + 1, 0, k + 1, paths[k]);
	flush_requests();
	for (int k = 0; k < nfiles; k++) twalk_reply(paths[k]);
	for (int k = 0; k < nfiles; k++) tlopen(k + 1, k + 1);
	flush_requests();
	for (int k = 0; k < nfiles; k++) reply(Tlopen + 1, "Tlopen");
	for (int k = 0; k < nfiles; k++) tread(k + 1, k + 1, 0);
	flush_requests();
	for (int k = 0; k < nfiles; k++) { reply(Tread + 1, "Tread"); total += g32(rbuf + 7); }
	for (int k = 0; k < nfiles; k++) tclunk(k + 1, k + 1);
	flush_requests();
	for (int k = 0; k < nfiles; k++) reply(Tclunk + 1, "Tclunk");
	return total;
}

/* Split PATH (with file number n substituted) into walk names. */
static char **split_path(const char *fmt, int n)
{
	char buf[512];
	snprintf(buf, sizeof buf, fmt, n);
	char **names = calloc(64, sizeof *names);
	int k = 0;
	for (char *s = strtok(buf, "/"); s && k < 63; s = strtok(NULL, "/"))
		names[k++] = strdup(s);
	return names;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc < 4)
		die("%s", "usage: ninep_bench read|null|phased SOCKET ANAME [-p FMT] [-n N] [-o K] [-s SECS] [-c N] [-w SECS] [-g]");
	const char *mode = argv[1], *fmt = "s%04d/status";
	double seconds = 2, warmup = 0.2;
	long maxops = -1;
	int go = 0, opt;
	if (strcmp(mode, "phased") == 0)
		nfiles = 100;
	optind = 4;
	while ((opt = getopt(argc, argv, "p:n:o:s:c:w:g")) != -1) {
		switch (opt) {
		case 'p': fmt = optarg; break;
		case 'n': nfiles = atoi(optarg); break;
		case 'o': first = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'c': maxops = atol(optarg); break;
		case 'w': warmup = atof(optarg); break;
		case 'g': go = 1; break;
		default: die("%s", "bad option");
		}
	}
	long (*op)(int);
	if (strcmp(mode, "read") == 0) op = op_read;
	else if (strcmp(mode, "null") == 0) op = op_null;
	else if (strcmp(mode, "phased") == 0) op = op_phased;
	else die("unknown mode %s", mode);
	if (nfiles < 1 || (op == op_phased && nfiles > MAXPHASE))
		die("%s", "-n out of range");
	paths = calloc(nfiles, sizeof *paths);
	for (int k = 0; k < nfiles; k++)
		paths[k] = split_path(fmt, k + 1);
	rbuf = malloc(MSIZE);
	wbuf = malloc((size_t)MAXPHASE * 1024);
	dial(argv[2]);
	handshake(argv[3]);

	int i = first % nfiles;
	double t_end = now() + warmup;
	while (now() < t_end) {
		op(i);
		i = (i + 1) % nfiles;
	}
	if (go) {
		char line[16];
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof line, stdin))
			die("%s", "no go line on stdin");
	}
	size_t cap = 1 << 16, ops = 0;
	double *lat = malloc(cap * sizeof *lat);
	long bytes = 0;
	double t0 = now(), t = t0;
	t_end = t0 + seconds;
	while (t < t_end && (maxops < 0 || (long)ops < maxops)) {
		bytes += op(i);
		double t1 = now();
		if (ops == cap)
			lat = realloc(lat, (cap *= 2) * sizeof *lat);
		lat[ops++] = t1 - t;
		t = t1;
		i = (i + 1) % nfiles;
	}
	double secs = t - t0;
	qsort(lat, ops, sizeof *lat, cmp);
	double us = 1e6, mean = ops ? secs / ops : 0;
#define PCT(p) (ops ? lat[(size_t)((ops - 1) * (p))] : 0)
	printf("result mode=%s ops=%zu secs=%.6f rate=%.1f mean_us=%.1f med_us=%.1f p90_us=%.1f p99_us=%.1f bytes=%ld\n",
	       mode, ops, secs, ops / secs, mean * us, PCT(0.5) * us, PCT(0.9) * us, PCT(0.99) * us, bytes);
	return 0;
}
