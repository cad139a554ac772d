/* `zmpi codec list|eval|compress|decompress|info` */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "zmpi/codec.h"

static void codec_usage(FILE *f)
{
    fprintf(f,
            "usage:\n"
            "  zmpi codec list\n"
            "  zmpi codec eval FILE --dtype f32|f64 --codec NAME [--rel X | --abs X]\n"
            "                  [--threads T] [--repeat R] [--json] [TUNING]\n"
            "  zmpi codec compress IN OUT --dtype f32|f64|u8 --codec NAME [--rel X | --abs X]\n"
            "                  [--threads T] [TUNING]\n"
            "  zmpi codec decompress IN OUT [--threads T]\n"
            "  zmpi codec info FILE\n"
            "IN and FILE may be '-' (standard input); OUT may be '-' (standard output).\n"
            "OUT: a symlink is followed to its final target (a dangling one is refused, as\n"
            "by cp); a regular file is written to a temporary in its own directory, then\n"
            "renamed over it, keeping an existing file's mode (and owner, as root); a\n"
            "device, FIFO, socket, /dev/stdout or /dev/fd/N is written in place, never\n"
            "replaced. Binary data (compressed or decompressed) never goes to a terminal.\n"
            "TUNING: --segment N (elements per segment, default 65536), --block 8|16|32|64 (fzl),\n"
            "        --dims NXxNY[xNZ] (shape hint, slowest first: 2-D/3-D prediction in fzr),\n"
            "        --level L (zstd), --trunc-bits N (trunc), --no-checksum\n"
            "A bound (--rel or --abs) is required by the error-bounded codecs, ignored by the\n"
            "lossless ones and refused by the fixed-precision ones (they keep a precision,\n"
            "not a bound). IN and OUT must be different files. Raw files are little-endian.\n"
            "eval --json prints one object: codec, dtype, count, eb, ratio, comp_gbps,\n"
            "decomp_gbps, max_abs_err, max_err_over_eb, psnr, nrmse (speeds: medians of the\n"
            "repeats, GB = 1e9 bytes of original data; non-finite numbers are null).\n");
}

void *cli_read_file(const char *path, size_t *size)
{
    int is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "zmpi: cannot open '%s': %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 20, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        if (len == cap) {
            unsigned char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0)
            break;
    }
    int err = ferror(f);
    if (!is_stdin)
        fclose(f);
    if (!buf) {
        fprintf(stderr, "zmpi: out of memory reading '%s'\n", path);
        return NULL;
    }
    if (err) {
        fprintf(stderr, "zmpi: read error on '%s'\n", path);
        free(buf);
        return NULL;
    }
    *size = len;
    return buf;
}

/* ---- output paths (see cli.h for the rules) ---- */

/* The directory part of PATH ("." when it has none), newly allocated. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    while (slash > path && slash[-1] == '/')
        slash--;
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

/* The text of symlink PATH, newly allocated; NULL with errno set on error. */
static char *read_link(const char *path)
{
    for (size_t cap = 256;; cap *= 2) {
        char *b = malloc(cap);
        if (!b)
            return NULL;
        ssize_t n = readlink(path, b, cap);
        if (n < 0) {
            free(b);
            return NULL;
        }
        if ((size_t)n < cap) {
            b[n] = '\0';
            return b;
        }
        free(b);
        if (cap >= ((size_t)1 << 20)) {
            errno = ENAMETOOLONG;
            return NULL;
        }
    }
}

/* FROM's symlink text TARGET taken relative to the directory holding FROM. */
static char *link_dest(const char *from, const char *target)
{
    if (target[0] == '/')
        return strdup(target);
    char *d = dir_of(from);
    if (!d)
        return NULL;
    if (!strcmp(d, ".")) {
        free(d);
        return strdup(target);
    }
    size_t n = strlen(d) + strlen(target) + 2;
    char *r = malloc(n);
    if (r)
        snprintf(r, n, "%s%s%s", d, d[strlen(d) - 1] == '/' ? "" : "/", target);
    free(d);
    return r;
}

/* N if S is a decimal descriptor number, else -1. */
static int fd_number(const char *s)
{
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return *end || errno || v > INT_MAX ? -1 : (int)v;
}

/* The descriptor named literally by /dev/stdout, /dev/stderr, /dev/fd/N, or -1. */
static int literal_fd(const char *path)
{
    if (!strcmp(path, "/dev/stdout"))
        return STDOUT_FILENO;
    if (!strcmp(path, "/dev/stderr"))
        return STDERR_FILENO;
    if (!strncmp(path, "/dev/fd/", 8))
        return fd_number(path + 8);
    return -1;
}

static void out_error(const cli_out *o, const char *path, const char *what, int err)
{
    if (path && strcmp(path, o->name))
        fprintf(stderr, "zmpi: %s '%s' (-> '%s'): %s\n", what, o->name, path, strerror(err));
    else
        fprintf(stderr, "zmpi: %s '%s': %s\n", what, o->name, strerror(err));
}

enum { OUT_NEW, OUT_REG, OUT_OTHER, OUT_FD };

/* Follows OUT's symlinks one by one. Sets *kind, *path (the final path, newly
 * allocated; not for OUT_FD), *fd (OUT_FD) and *st (OUT_REG). 0 or -1 (printed). */
static int resolve_output(const cli_out *o, int *kind, char **path, int *fd, struct stat *st)
{
    *path = NULL;
    int n = !strcmp(o->name, "-") ? STDOUT_FILENO : literal_fd(o->name);
    if (n < 0 && !strncmp(o->name, "/dev/fd/", 8)) {
        fprintf(stderr, "zmpi: cannot write '%s': not a descriptor number\n", o->name);
        return -1;
    }
    if (n >= 0) {
        *kind = OUT_FD;
        *fd = n;
        return 0;
    }
    /* /proc's descriptor links (/dev/stdout -> /proc/self/fd/1 -> "pipe:[7]")
     * are followed by the kernel, never by their text */
    struct stat procfs;
    int have_proc = stat("/proc/self/fd", &procfs) == 0;
    char *cur = strdup(o->name);
    for (int hops = 0; cur; hops++) {
        if (lstat(cur, st) != 0) {
            int err = errno;
            if (err == ENOENT && hops == 0) {
                *kind = OUT_NEW;
                *path = cur;
                return 0;
            }
            if (err == ENOENT)
                fprintf(stderr, "zmpi: not writing through dangling symlink '%s' ('%s' does not exist)\n",
                        o->name, cur);
            else
                out_error(o, cur, "cannot write", err);
            free(cur);
            return -1;
        }
        if (!S_ISLNK(st->st_mode)) {
            *kind = S_ISREG(st->st_mode) ? OUT_REG : OUT_OTHER;
            *path = cur;
            return 0;
        }
        if (have_proc && st->st_dev == procfs.st_dev) {
            /* .../fd/N naming what our own descriptor N holds: write to N itself,
             * at its position and with its flags, as a shell redirection does */
            const char *base = strrchr(cur, '/');
            int k = fd_number(base ? base + 1 : cur);
            struct stat a, b;
            if (k >= 0 && stat(cur, &a) == 0 && fstat(k, &b) == 0 && a.st_dev == b.st_dev &&
                a.st_ino == b.st_ino) {
                free(cur);
                *kind = OUT_FD;
                *fd = k;
                return 0;
            }
            *kind = OUT_OTHER;
            *path = cur;
            return 0;
        }
        if (hops >= 40) {
            out_error(o, NULL, "cannot write", ELOOP);
            free(cur);
            return -1;
        }
        char *text = read_link(cur);
        if (!text) {
            out_error(o, cur, "cannot write", errno);
            free(cur);
            return -1;
        }
        char *next = link_dest(cur, text);
        free(text);
        free(cur);
        cur = next;
    }
    fprintf(stderr, "zmpi: out of memory\n");
    return -1;
}

/* Creates the temporary for regular file PATH in PATH's own directory. */
static int create_temp(const char *path, char **tmp)
{
    size_t n = strlen(path) + 64;
    *tmp = malloc(n);
    if (!*tmp) {
        errno = ENOMEM;
        return -1;
    }
    for (int i = 0; i < 100; i++) {
        if (i == 0)
            snprintf(*tmp, n, "%s.tmp.%ld", path, (long)getpid());
        else
            snprintf(*tmp, n, "%s.tmp.%ld.%d", path, (long)getpid(), i);
        int fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0666);
        if (fd < 0 && errno == ENAMETOOLONG) { /* a long name: a short one, same directory */
            char *d = dir_of(path);
            if (!d)
                break;
            snprintf(*tmp, n, "%s/zmpi.tmp.%ld.%d", d, (long)getpid(), i);
            free(d);
            fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0666);
        }
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

int cli_output_open(cli_out *o, const char *path, const char *what)
{
    memset(o, 0, sizeof *o);
    o->name = path;
    o->fd = -1;
    int kind, fd = -1;
    struct stat st;
    char *final;
    if (resolve_output(o, &kind, &final, &fd, &st))
        return -1;
    if (kind == OUT_FD) {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY) {
            fprintf(stderr, "zmpi: cannot write '%s': descriptor %d is not open%s\n", o->name, fd,
                    fl < 0 ? "" : " for writing");
            return -1;
        }
        o->fd = fd;
    } else if (kind == OUT_OTHER) {
        /* device, FIFO, socket, descriptor: written in place, never replaced */
        o->fd = open(final, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (o->fd < 0) {
            if (errno == ENXIO && S_ISSOCK(st.st_mode))
                fprintf(stderr, "zmpi: cannot write '%s': a socket cannot be opened by name "
                                "(pass it as a descriptor, /dev/fd/N)\n", o->name);
            else
                out_error(o, final, "cannot write", errno);
            free(final);
            return -1;
        }
        o->close_fd = 1;
        struct stat now;
        if (fstat(o->fd, &now) == 0 && S_ISREG(now.st_mode) && ftruncate(o->fd, 0) != 0) {
            out_error(o, final, "cannot truncate", errno);
            cli_output_abort(o);
            free(final);
            return -1;
        }
    } else {
        /* regular file: a temporary beside the final target, renamed over it */
        if (kind == OUT_REG && faccessat(AT_FDCWD, final, W_OK, AT_EACCESS) != 0) {
            out_error(o, final, "cannot write", errno);
            free(final);
            return -1;
        }
        o->fd = create_temp(final, &o->tmp);
        if (o->fd < 0) {
            out_error(o, final, "cannot create a temporary file for", errno);
            free(o->tmp);
            o->tmp = NULL;
            free(final);
            return -1;
        }
        o->close_fd = 1;
        o->path = final;
        final = NULL;
        if (kind == OUT_REG) {
            /* the old file's owner and group (as root; else its group if we
             * belong to it): best effort, a failure keeps ours. Then its mode. */
            int r = geteuid() == 0           ? fchown(o->fd, st.st_uid, st.st_gid)
                    : st.st_gid != getegid() ? fchown(o->fd, (uid_t)-1, st.st_gid)
                                             : 0;
            (void)r;
            if (fchmod(o->fd, st.st_mode & 07777) != 0) {
                out_error(o, o->path, "cannot set the mode of", errno);
                cli_output_abort(o);
                return -1;
            }
        }
    }
    free(final);
    if (what && isatty(o->fd)) {
        fprintf(stderr, "zmpi: not writing %s to a terminal ('%s'); redirect it to a file or a pipe\n",
                what, o->name);
        cli_output_abort(o);
        return -1;
    }
    return 0;
}

static int write_all(int fd, const void *data, size_t size)
{
    const unsigned char *p = data;
    while (size > 0) {
        ssize_t w = write(fd, p, size < ((size_t)1 << 30) ? size : ((size_t)1 << 30));
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) { /* an O_NONBLOCK descriptor */
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            if (poll(&pf, 1, -1) < 0 && errno != EINTR)
                return -1;
            continue;
        }
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        p += w;
        size -= (size_t)w;
    }
    return 0;
}

int cli_output_write(cli_out *o, const void *data, size_t size)
{
    /* a closed pipe is an error reported here (EPIPE), not a silent death */
    struct sigaction ign, old;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    int restore = sigaction(SIGPIPE, &ign, &old) == 0;
    int rc = write_all(o->fd, data, size), err = errno;
    if (restore)
        sigaction(SIGPIPE, &old, NULL);
    const char *path = o->tmp ? o->path : NULL;
    if (o->close_fd && close(o->fd) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    o->fd = -1;
    o->close_fd = 0;
    if (rc == 0 && o->tmp && rename(o->tmp, o->path) != 0) {
        out_error(o, path, "cannot replace", errno);
        cli_output_abort(o);
        return -1;
    }
    if (rc != 0) {
        out_error(o, path, "cannot write", err);
        cli_output_abort(o);
        return -1;
    }
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    return 0;
}

void cli_output_abort(cli_out *o)
{
    if (o->close_fd && o->fd >= 0)
        close(o->fd);
    o->fd = -1;
    o->close_fd = 0;
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
}

int cli_write_file(const char *path, const void *data, size_t size, const char *what)
{
    cli_out o;
    if (cli_output_open(&o, path, what))
        return -1;
    return cli_output_write(&o, data, size);
}

typedef struct opts {
    const char *dtype_s, *codec_s;
    zmpi_eb_mode mode;
    double eb;
    long threads, repeat, segment, block, level, trunc_bits;
    int json, no_checksum;
    int ndims;
    size_t dims[8];
    const char *pos[2];
    int npos;
} opts;

static int parse_num(const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno) {
        fprintf(stderr, "zmpi: %s expects a number, got '%s'\n", opt, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "zmpi: %s expects an integer in [%ld, %ld], got '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* "NXxNY[xNZ...]", slowest dimension first, as in the data files' names. */
static int parse_dims(const char *opt, const char *s, opts *o)
{
    const char *p = s;
    o->ndims = 0;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno || v == 0 || o->ndims == 8 || *p == '-' || (*end && *end != 'x')) {
            fprintf(stderr, "zmpi: %s expects up to 8 positive sizes like 1201x2401, got '%s'\n", opt, s);
            return -1;
        }
        o->dims[o->ndims++] = (size_t)v;
        p = *end ? end + 1 : end;
        if (*end && !*p) {
            fprintf(stderr, "zmpi: %s expects up to 8 positive sizes like 1201x2401, got '%s'\n", opt, s);
            return -1;
        }
    }
    return 0;
}

static int parse_opts(int argc, char **argv, int maxpos, opts *o)
{
    memset(o, 0, sizeof *o);
    o->threads = 1;
    o->repeat = 5;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = !strcmp(a, "--dtype") || !strcmp(a, "--codec") || !strcmp(a, "--rel") ||
                    !strcmp(a, "--abs") || !strcmp(a, "--threads") || !strcmp(a, "--repeat") ||
                    !strcmp(a, "--segment") || !strcmp(a, "--block") || !strcmp(a, "--level") ||
                    !strcmp(a, "--trunc-bits") || !strcmp(a, "--dims");
        if (takes && !v) {
            fprintf(stderr, "zmpi: %s needs a value\n", a);
            return -1;
        }
        int rc = 0;
        if (!strcmp(a, "--dtype"))
            o->dtype_s = v;
        else if (!strcmp(a, "--codec"))
            o->codec_s = v;
        else if (!strcmp(a, "--rel") || !strcmp(a, "--abs")) {
            if (o->mode != ZMPI_EB_NONE) {
                fprintf(stderr, "zmpi: give one bound, --rel or --abs\n");
                return -1;
            }
            o->mode = a[2] == 'r' ? ZMPI_EB_REL : ZMPI_EB_ABS;
            rc = parse_num(a, v, &o->eb);
            if (!rc && (!(o->eb > 0) || !isfinite(o->eb))) {
                fprintf(stderr, "zmpi: %s must be a finite number > 0, got '%s'\n", a, v);
                rc = -1;
            }
        } else if (!strcmp(a, "--threads"))
            rc = parse_long(a, v, 0, 4096, &o->threads);
        else if (!strcmp(a, "--repeat"))
            rc = parse_long(a, v, 1, 100000, &o->repeat);
        else if (!strcmp(a, "--segment"))
            rc = parse_long(a, v, 1, 1L << 26, &o->segment);
        else if (!strcmp(a, "--block"))
            rc = parse_long(a, v, 8, 64, &o->block);
        else if (!strcmp(a, "--level"))
            rc = parse_long(a, v, 1, 22, &o->level);
        else if (!strcmp(a, "--trunc-bits"))
            rc = parse_long(a, v, 1, 52, &o->trunc_bits);
        else if (!strcmp(a, "--dims"))
            rc = parse_dims(a, v, o);
        else if (!strcmp(a, "--json")) {
            o->json = 1;
            continue;
        } else if (!strcmp(a, "--no-checksum")) {
            o->no_checksum = 1;
            continue;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "zmpi: unknown option '%s' (try 'zmpi codec --help')\n", a);
            return -1;
        } else {
            if (o->npos >= maxpos) {
                fprintf(stderr, "zmpi: unexpected argument '%s'\n", a);
                return -1;
            }
            o->pos[o->npos++] = a;
            continue;
        }
        if (rc)
            return -1;
        i++;
    }
    if (o->npos < maxpos) {
        fprintf(stderr, "zmpi: missing %s (try 'zmpi codec --help')\n",
                maxpos == 2 ? "input and output files" : "input file");
        return -1;
    }
    return 0;
}

static int parse_dtype(const char *s, zmpi_dtype *dt)
{
    if (!s) {
        fprintf(stderr, "zmpi: --dtype is required (f32, f64 or u8)\n");
        return -1;
    }
    if (!strcmp(s, "f32") || !strcmp(s, "float"))
        *dt = ZMPI_FLOAT;
    else if (!strcmp(s, "f64") || !strcmp(s, "double"))
        *dt = ZMPI_DOUBLE;
    else if (!strcmp(s, "u8") || !strcmp(s, "byte"))
        *dt = ZMPI_BYTE;
    else {
        fprintf(stderr, "zmpi: unknown dtype '%s' (f32, f64 or u8)\n", s);
        return -1;
    }
    return 0;
}

static const char *dtype_name(zmpi_dtype dt)
{
    return dt == ZMPI_FLOAT ? "f32" : dt == ZMPI_DOUBLE ? "f64" : "u8";
}

/* Builds a context from the options; prints and returns NULL on error. */
static zmpi_ctx *make_ctx(const opts *o, zmpi_dtype dt, zmpi_codec *codec_out)
{
    if (!o->codec_s) {
        fprintf(stderr, "zmpi: --codec is required ('zmpi codec list' shows them)\n");
        return NULL;
    }
    int c = zmpi_codec_from_name(o->codec_s);
    if (c < 0) {
        fprintf(stderr, "zmpi: unknown codec '%s' ('zmpi codec list' shows them)\n", o->codec_s);
        return NULL;
    }
    zmpi_ctx *ctx = zmpi_ctx_create();
    if (!ctx) {
        fprintf(stderr, "zmpi: out of memory\n");
        return NULL;
    }
    zmpi_ctx_set_codec(ctx, (zmpi_codec)c);
    int kind = zmpi_codec_kind((zmpi_codec)c);
    const char *bad = NULL;
    if (kind == ZMPI_KIND_BOUNDED) {
        if (o->mode == ZMPI_EB_NONE)
            bad = "this codec is error-bounded: give --rel X or --abs X";
        else
            zmpi_ctx_set_bound(ctx, o->mode, o->eb);
    } else if (kind == ZMPI_KIND_FIXED && o->mode != ZMPI_EB_NONE) {
        bad = "this codec keeps a fixed precision and cannot hold an error bound: drop --rel / --abs, or "
              "choose an error-bounded codec (fzl, fzr, linpred-byte, linpred-bit)";
    }
    if (!bad && zmpi_ctx_set_param(ctx, ZMPI_P_THREADS, o->threads) < 0)
        bad = "bad --threads";
    if (!bad && o->segment && zmpi_ctx_set_param(ctx, ZMPI_P_SEGMENT, o->segment) < 0)
        bad = "bad --segment";
    if (!bad && o->block && zmpi_ctx_set_param(ctx, ZMPI_P_BLOCK, o->block) < 0)
        bad = "--block must be 8, 16, 32 or 64";
    if (!bad && o->level && zmpi_ctx_set_param(ctx, ZMPI_P_LEVEL, o->level) < 0)
        bad = "bad --level";
    if (!bad && o->trunc_bits) {
        long max = dt == ZMPI_FLOAT ? 23 : 52;
        if (o->trunc_bits > max || zmpi_ctx_set_param(ctx, ZMPI_P_TRUNC_BITS, o->trunc_bits) < 0)
            bad = dt == ZMPI_FLOAT ? "--trunc-bits must be 1..23 for f32" : "--trunc-bits must be 1..52";
    }
    if (!bad && o->no_checksum)
        zmpi_ctx_set_param(ctx, ZMPI_P_CHECKSUM, 0);
    if (!bad && o->ndims && zmpi_ctx_set_dims(ctx, o->ndims, o->dims) != ZMPI_OK)
        bad = "bad --dims (a row or plane beyond 2^32 - 1 elements)";
    if (bad) {
        fprintf(stderr, "zmpi: %s\n", bad);
        zmpi_ctx_free(ctx);
        return NULL;
    }
    *codec_out = (zmpi_codec)c;
    return ctx;
}

static void *load_array(const char *path, zmpi_dtype dt, size_t *count)
{
    size_t size;
    void *buf = cli_read_file(path, &size);
    if (!buf)
        return NULL;
    size_t es = zmpi_dtype_size(dt);
    if (size % es) {
        fprintf(stderr, "zmpi: '%s' has %zu bytes, not a whole number of %s elements\n", path, size,
                dtype_name(dt));
        free(buf);
        return NULL;
    }
    *count = size / es;
    return buf;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void json_num(const char *key, double v, int last)
{
    if (isfinite(v))
        printf("\"%s\": %.17g%s", key, v, last ? "" : ", ");
    else
        printf("\"%s\": null%s", key, last ? "" : ", ");
}

/* What eval measured. */
typedef struct eval_result {
    zmpi_codec codec;
    zmpi_dtype dt;
    size_t n, raw;
    ptrdiff_t len;  /* stream size */
    double cs, ds;  /* median seconds of compression, decompression */
    double eb;      /* absolute bound in the stream (bounded codecs) */
    zmpi_quality q; /* decompressed vs original */
} eval_result;

/* o->repeat timed round trips of x through buf into y; 0, or 1 after a message. */
static int eval_rounds(const opts *o, zmpi_ctx *ctx, const void *x, void *buf, size_t cap, void *y,
                       eval_result *er)
{
    double *tc = malloc(sizeof(double) * (size_t)o->repeat), *td = malloc(sizeof(double) * (size_t)o->repeat);
    zmpi_channel *chc = zmpi_channel_create(0), *chd = zmpi_channel_create(0);
    ptrdiff_t got = 0;
    int rc = 1;
    if (!tc || !td || !chc || !chd) {
        fprintf(stderr, "zmpi: out of memory\n");
        goto out;
    }
    for (long r = 0; r < o->repeat; r++) {
        /* each round is a fresh channel pair, so inter-step codecs see a first message */
        zmpi_channel_reset(chc);
        zmpi_channel_reset(chd);
        double t0 = now_s();
        er->len = zmpi_compress_channel(ctx, chc, x, er->n, er->dt, buf, cap);
        double t1 = now_s();
        if (er->len < 0) {
            fprintf(stderr, "zmpi: compression failed: %s\n", zmpi_strerror((int)er->len));
            goto out;
        }
        got = zmpi_decompress_channel(ctx, chd, buf, (size_t)er->len, y, er->raw);
        double t2 = now_s();
        if (got < 0 || (size_t)got != er->raw) {
            fprintf(stderr, "zmpi: decompression failed: %s\n",
                    got < 0 ? zmpi_strerror((int)got) : "wrong size");
            goto out;
        }
        tc[r] = t1 - t0;
        td[r] = t2 - t1;
    }
    er->cs = median(tc, (size_t)o->repeat);
    er->ds = median(td, (size_t)o->repeat);
    rc = 0;
out:
    zmpi_channel_free(chc);
    zmpi_channel_free(chd);
    free(tc);
    free(td);
    return rc;
}

/* Prints eval's result (text or one JSON object); returns 0, or 3 if the
 * round trip broke the codec's guarantee. */
static int eval_report(const opts *o, const eval_result *er, const void *x, const void *y)
{
    const zmpi_quality *q = &er->q;
    int kind = zmpi_codec_kind(er->codec);
    double eb = er->eb;
    double over = kind == ZMPI_KIND_BOUNDED ? (eb > 0 ? q->max_abs_err / eb : 0.0)
                                            : (kind == ZMPI_KIND_LOSSLESS ? 0.0 : NAN);
    int lossless_bad = kind == ZMPI_KIND_LOSSLESS && memcmp(x, y, er->raw) != 0;
    int bound_bad = kind == ZMPI_KIND_BOUNDED && q->max_abs_err > eb;
    double ratio = er->len > 0 ? (double)er->raw / (double)er->len : 0.0;
    double cg = er->cs > 0 ? (double)er->raw / er->cs / 1e9 : 0.0;
    double dg = er->ds > 0 ? (double)er->raw / er->ds / 1e9 : 0.0;
    if (o->json) {
        printf("{\"codec\": \"%s\", \"dtype\": \"%s\", \"count\": %zu, ", zmpi_codec_name(er->codec),
               dtype_name(er->dt), er->n);
        json_num("eb", eb, 0);
        json_num("ratio", ratio, 0);
        json_num("comp_gbps", cg, 0);
        json_num("decomp_gbps", dg, 0);
        json_num("max_abs_err", q->max_abs_err, 0);
        json_num("max_err_over_eb", over, 0);
        json_num("psnr", q->psnr, 0);
        json_num("nrmse", q->nrmse, 1);
        printf("}\n");
    } else {
        printf("codec            %s\n", zmpi_codec_name(er->codec));
        printf("file             %s (%zu x %s, %.3f MB)\n", o->pos[0], er->n, dtype_name(er->dt),
               (double)er->raw / 1e6);
        if (kind == ZMPI_KIND_BOUNDED)
            printf("bound            %s %g -> absolute eb %.6g\n", o->mode == ZMPI_EB_REL ? "REL" : "ABS",
                   o->eb, eb);
        printf("ratio            %.3f (%zu -> %td bytes)\n", ratio, er->raw, er->len);
        printf("compress         %.3f GB/s (median of %ld)\n", cg, o->repeat);
        printf("decompress       %.3f GB/s\n", dg);
        printf("max abs error    %.6g", q->max_abs_err);
        if (kind == ZMPI_KIND_BOUNDED)
            printf("  (%.4f of the bound)", over);
        printf("\nPSNR             %.2f dB\nNRMSE            %.3g\n", q->psnr, q->nrmse);
        if (q->nonfinite_mismatch)
            printf("non-finite values not reproduced: %llu\n", (unsigned long long)q->nonfinite_mismatch);
    }
    if (lossless_bad || bound_bad || q->nonfinite_mismatch) {
        fprintf(stderr, "zmpi: BUG: %s\n",
                lossless_bad ? "lossless round trip differs" : bound_bad ? "error bound violated"
                                                                          : "non-finite value altered");
        return 3;
    }
    return 0;
}

static int cmd_eval(int argc, char **argv)
{
    opts o;
    eval_result er = {0};
    if (parse_opts(argc, argv, 1, &o) || parse_dtype(o.dtype_s, &er.dt))
        return 2;
    if (er.dt == ZMPI_BYTE) {
        fprintf(stderr, "zmpi: eval measures errors of float data: use --dtype f32 or f64\n");
        return 2;
    }
    zmpi_ctx *ctx = make_ctx(&o, er.dt, &er.codec);
    if (!ctx)
        return 2;
    int status = 1;
    void *x = load_array(o.pos[0], er.dt, &er.n);
    er.raw = er.n * zmpi_dtype_size(er.dt);
    size_t cap = zmpi_max_compressed_size(ctx, er.n, er.dt);
    void *buf = x ? malloc(cap ? cap : 1) : NULL;
    void *y = x ? malloc(er.raw ? er.raw : 1) : NULL;
    if (!x)
        goto out;
    if (!buf || !y) {
        fprintf(stderr, "zmpi: out of memory\n");
        goto out;
    }
    if (eval_rounds(&o, ctx, x, buf, cap, y, &er))
        goto out;
    zmpi_stream_info info;
    zmpi_stream_info_get(buf, (size_t)er.len, &info);
    er.eb = zmpi_codec_kind(er.codec) == ZMPI_KIND_BOUNDED ? info.eb : 0.0;
    zmpi_quality_compare(x, y, er.n, er.dt, &er.q);
    status = eval_report(&o, &er, x, y);
out:
    free(x);
    free(y);
    free(buf);
    zmpi_ctx_free(ctx);
    return status;
}

/* 1 (with a message) if the input and output name the same file: the
 * output, written through a temporary renamed over it, would replace the
 * input (through another name, a link or a symbolic link too). */
static int same_file(const char *in, const char *out)
{
    struct stat a, b;
    if (!strcmp(in, "-") || !strcmp(out, "-") || stat(in, &a) != 0 || stat(out, &b) != 0)
        return 0;
    if (a.st_dev != b.st_dev || a.st_ino != b.st_ino || !S_ISREG(a.st_mode))
        return 0;
    fprintf(stderr, "zmpi: '%s' and '%s' are the same file: the output would replace the input\n", in, out);
    return 1;
}

static int cmd_compress(int argc, char **argv)
{
    opts o;
    zmpi_dtype dt;
    zmpi_codec codec;
    if (parse_opts(argc, argv, 2, &o) || parse_dtype(o.dtype_s, &dt))
        return 2;
    if (same_file(o.pos[0], o.pos[1]))
        return 1;
    zmpi_ctx *ctx = make_ctx(&o, dt, &codec);
    if (!ctx)
        return 2;
    if (zmpi_codec_needs_channel(codec))
        fprintf(stderr, "zmpi: note: %s is an inter-step codec; a single file is its first message\n",
                zmpi_codec_name(codec));
    size_t n = 0;
    int status = 1;
    cli_out out;
    void *x = load_array(o.pos[0], dt, &n);
    size_t cap = zmpi_max_compressed_size(ctx, n, dt);
    void *buf = x ? malloc(cap ? cap : 1) : NULL;
    zmpi_channel *ch = zmpi_channel_create(0);
    if (x && (!buf || !ch))
        fprintf(stderr, "zmpi: out of memory\n");
    if (x && buf && ch && cli_output_open(&out, o.pos[1], "compressed data") == 0) {
        ptrdiff_t len = zmpi_compress_channel(ctx, ch, x, n, dt, buf, cap);
        if (len < 0) {
            fprintf(stderr, "zmpi: compressing '%s': %s\n", o.pos[0], zmpi_strerror((int)len));
            cli_output_abort(&out);
        } else if (cli_output_write(&out, buf, (size_t)len) == 0)
            status = 0;
    }
    zmpi_channel_free(ch);
    free(x);
    free(buf);
    zmpi_ctx_free(ctx);
    return status;
}

static int cmd_decompress(int argc, char **argv)
{
    opts o;
    if (parse_opts(argc, argv, 2, &o))
        return 2;
    if (same_file(o.pos[0], o.pos[1]))
        return 1;
    size_t size;
    void *src = cli_read_file(o.pos[0], &size);
    if (!src)
        return 1;
    int status = 1;
    zmpi_stream_info info;
    int rc = zmpi_stream_info_get(src, size, &info);
    zmpi_ctx *ctx = zmpi_ctx_create();
    zmpi_channel *ch = zmpi_channel_create(0);
    void *y = NULL;
    if (rc) {
        fprintf(stderr, "zmpi: '%s': %s\n", o.pos[0], zmpi_strerror(rc));
        goto out;
    }
    size_t raw = (size_t)info.count * zmpi_dtype_size(info.dtype);
    y = malloc(raw ? raw : 1);
    if (!ctx || !ch || !y) {
        fprintf(stderr, "zmpi: out of memory\n");
        goto out;
    }
    zmpi_ctx_set_param(ctx, ZMPI_P_THREADS, o.threads);
    cli_out dst;
    if (cli_output_open(&dst, o.pos[1], "decompressed data"))
        goto out;
    ptrdiff_t got = zmpi_decompress_channel(ctx, ch, src, size, y, raw);
    if (got < 0) {
        fprintf(stderr, "zmpi: '%s': %s\n", o.pos[0], zmpi_strerror((int)got));
        cli_output_abort(&dst);
        goto out;
    }
    if (cli_output_write(&dst, y, raw) == 0)
        status = 0;
out:
    zmpi_channel_free(ch);
    zmpi_ctx_free(ctx);
    free(src);
    free(y);
    return status;
}

static int cmd_info(int argc, char **argv)
{
    opts o;
    if (parse_opts(argc, argv, 1, &o))
        return 2;
    size_t size;
    void *src = cli_read_file(o.pos[0], &size);
    if (!src)
        return 1;
    zmpi_stream_info info;
    int rc = zmpi_stream_info_get(src, size, &info);
    free(src);
    if (rc) {
        fprintf(stderr, "zmpi: '%s': %s\n", o.pos[0], zmpi_strerror(rc));
        return 1;
    }
    printf("codec       %s\ndtype       %s\ncount       %llu\neb          %.17g\nparam       %u\n"
           "segment     %u elements x %u\nflags       %s%s\nseq         %llu\nsize        %zu bytes"
           "%s\n",
           zmpi_codec_name(info.codec), dtype_name(info.dtype), (unsigned long long)info.count,
           info.eb, info.param, info.segment, info.nsegments,
           info.flags & ZMPI_SF_CHECKSUM ? "checksum " : "", info.flags & ZMPI_SF_RESET ? "reset" : "",
           (unsigned long long)info.seq, info.stream_size,
           info.stream_size != size ? " (file has trailing bytes)" : "");
    return 0;
}

static int cmd_list(void)
{
    static const char *kinds[] = {"lossless", "bounded", "fixed"};
    printf("%-14s %-9s %-12s %s\n", "codec", "kind", "dtypes", "description");
    for (int c = 0; c < ZMPI_CODEC_COUNT_; c++) {
        int k = zmpi_codec_kind((zmpi_codec)c);
        const char *dts = c == ZMPI_CODEC_DP2SP || c == ZMPI_CODEC_DP2SP_INTER ? "f64"
                          : c == ZMPI_CODEC_STORED || c == ZMPI_CODEC_ZSTD     ? "f32 f64 u8"
                                                                               : "f32 f64";
        printf("%-14s %-9s %-12s %s%s\n", zmpi_codec_name((zmpi_codec)c), kinds[k], dts,
               zmpi_codec_description((zmpi_codec)c),
               zmpi_codec_needs_channel((zmpi_codec)c) ? " [inter-step]" : "");
    }
    return 0;
}

int zmpi_cli_codec(int argc, char **argv)
{
    if (argc < 1 || !strcmp(argv[0], "-h") || !strcmp(argv[0], "--help")) {
        codec_usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    if (!strcmp(argv[0], "list"))
        return cmd_list();
    if (!strcmp(argv[0], "eval"))
        return cmd_eval(argc - 1, argv + 1);
    if (!strcmp(argv[0], "compress"))
        return cmd_compress(argc - 1, argv + 1);
    if (!strcmp(argv[0], "decompress"))
        return cmd_decompress(argc - 1, argv + 1);
    if (!strcmp(argv[0], "info"))
        return cmd_info(argc - 1, argv + 1);
    fprintf(stderr, "zmpi: unknown codec command '%s' (try 'zmpi codec --help')\n", argv[0]);
    return 2;
}
