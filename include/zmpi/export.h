/*
 * zmpi/export.h - ZMPI_API, the mark of zmpi's public functions.
 *
 * libzmpi and libzmpi_mpi are built with hidden symbol visibility
 * (-fvisibility=hidden): a shared build exports only what the public headers
 * declare with ZMPI_API, so that the libraries can be preloaded into any
 * program without their internal symbols meeting the program's. For a
 * consumer, and in a static build, the mark changes nothing.
 *
 * A build that wants another definition (e.g. an empty one) defines ZMPI_API
 * before including any zmpi header.
 */
#ifndef ZMPI_EXPORT_H
#define ZMPI_EXPORT_H

#ifndef ZMPI_API
#if defined(__GNUC__) || defined(__clang__)
#define ZMPI_API __attribute__((visibility("default")))
#else
#define ZMPI_API
#endif
#endif

#endif /* ZMPI_EXPORT_H */
