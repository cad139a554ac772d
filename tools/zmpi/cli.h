#ifndef ZMPI_TOOLS_CLI_H
#define ZMPI_TOOLS_CLI_H
#include <stddef.h>

/* `zmpi codec ...`; argv[0] is the sub-subcommand. Returns the exit status. */
int zmpi_cli_codec(int argc, char **argv);

/* Whole-file I/O with one-line errors on stderr (prefix "zmpi: "). */
void *cli_read_file(const char *path, size_t *size);
/* Writes to PATH.tmp.PID and renames over PATH, so a failure never leaves a
 * half-written file under the final name. Returns 0 or -1 (message printed). */
int cli_write_file(const char *path, const void *data, size_t size);
#endif
