#ifndef ZMPI_TOOLS_CLI_H
#define ZMPI_TOOLS_CLI_H
#include <stddef.h>

/* `zmpi config` (needs the MPI layer's settings table). Returns the exit status. */
int zmpi_cli_config(int argc, char **argv);
/* `zmpi codec ...`; argv[0] is the sub-subcommand. Returns the exit status. */
int zmpi_cli_codec(int argc, char **argv);
/* zmpi report FILE.json [--plot OUT.png]: runs tools/report/zmpi_report.py. */
int zmpi_cli_report(int argc, char **argv);

/* Whole-file I/O with one-line errors on stderr (prefix "zmpi: ").
 * PATH "-" is standard input. */
void *cli_read_file(const char *path, size_t *size);

/* An output being written: cli_output_open, then cli_output_write or
 * cli_output_abort. The path rules:
 *   "-", /dev/stdout, /dev/stderr, /dev/fd/N (and any /proc/.../fd/N link naming
 *     what our descriptor N holds): written to that descriptor, at its position;
 *   a symlink: followed link by link (relative to the link's own directory) to
 *     its final target, which gets the rules below; a dangling one is an error
 *     ("not writing through dangling symlink", as GNU cp);
 *   a regular file, existing or new: written to TARGET.tmp.PID in the target's
 *     directory, renamed over it when complete; an existing file must be writable
 *     and keeps its mode (and, as root, its owner and group); a new one gets
 *     0666 & ~umask. On failure the temporary is removed, the target untouched;
 *   anything else (character device, FIFO, socket, other /proc links): opened
 *     O_WRONLY and written in place, never created, renamed or unlinked.
 * WHAT (e.g. "compressed data") refuses a terminal with a message; NULL allows it.
 * Write errors (ENOSPC, EPIPE: SIGPIPE is ignored while writing) are reported.
 * Each call returns 0 or -1 with one message printed. */
typedef struct cli_out {
    const char *name; /* OUT as given */
    char *path;       /* the final target (regular files) */
    char *tmp;        /* the temporary renamed over path, or NULL */
    int fd, close_fd;
} cli_out;
int cli_output_open(cli_out *o, const char *path, const char *what);
/* Writes all of DATA, then commits (rename) or, on failure, aborts. */
int cli_output_write(cli_out *o, const void *data, size_t size);
/* Closes, removes the temporary; the target stays as it was. */
void cli_output_abort(cli_out *o);
/* cli_output_open + cli_output_write. */
int cli_write_file(const char *path, const void *data, size_t size, const char *what);
#endif
