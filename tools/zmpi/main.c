/* zmpi: the command-line front end. Subcommands live in their own files. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "zmpi/codec.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: zmpi <command> ...\n"
            "commands:\n"
            "  codec list                      the codecs and what they do\n"
            "  codec eval FILE ...             ratio, speed and error of a codec on a raw file\n"
            "  codec compress IN OUT ...       raw file -> zmpi stream\n"
            "  codec decompress IN OUT         zmpi stream -> raw file\n"
            "  codec info FILE                 print a stream's header\n"
            "  config                          every ZMPI_ setting: value, origin, validity\n"
            "  report FILE.json [--plot PNG]   the call sites and advice of a ZMPI_REPORT profile\n"
            "  version                         print the library version\n"
            "Run 'zmpi codec --help' for the options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "codec"))
        return zmpi_cli_codec(argc - 2, argv + 2);
#ifdef ZMPI_CLI_HAVE_MPI
    if (!strcmp(argv[1], "config"))
        return zmpi_cli_config(argc - 2, argv + 2);
#endif
    if (!strcmp(argv[1], "report"))
        return zmpi_cli_report(argc - 2, argv + 2);
    if (!strcmp(argv[1], "version")) {
        printf("zmpi %s (stream format %d)\n", zmpi_version(), ZMPI_STREAM_VERSION);
        return 0;
    }
    fprintf(stderr, "zmpi: unknown command '%s' (try 'zmpi --help')\n", argv[1]);
    return 2;
}
