/* Algorithm lookup over the per-collective tables. */
#include <string.h>
#include <strings.h>

#include "coll/registry.h"

static const char *const coll_names[ZMPI_COLL_COUNT] = {
    "bcast", "scatter", "gather", "allgather", "alltoall", "reduce_scatter", "allreduce", "reduce"};

static const zmpi_algo *table(ZMPI_Coll coll)
{
    switch (coll) {
    case ZMPI_COLL_BCAST: return zmpi_bcast_algos;
    case ZMPI_COLL_SCATTER: return zmpi_scatter_algos;
    case ZMPI_COLL_GATHER: return zmpi_gather_algos;
    case ZMPI_COLL_ALLGATHER: return zmpi_allgather_algos;
    case ZMPI_COLL_ALLTOALL: return zmpi_alltoall_algos;
    case ZMPI_COLL_REDUCE_SCATTER: return zmpi_reduce_scatter_algos;
    case ZMPI_COLL_ALLREDUCE: return zmpi_allreduce_algos;
    case ZMPI_COLL_REDUCE: return zmpi_reduce_algos;
    case ZMPI_COLL_COUNT: break;
    }
    return NULL;
}

const char *ZMPI_Coll_name(ZMPI_Coll coll)
{
    return (unsigned)coll < ZMPI_COLL_COUNT ? coll_names[coll] : NULL;
}

const zmpi_algo *zmpi_coll_algo_get(ZMPI_Coll coll, int id)
{
    const zmpi_algo *t = table(coll);
    for (; t && t->id; t++)
        if (t->id == id)
            return t;
    return NULL;
}

const zmpi_algo *zmpi_coll_algo_pick(ZMPI_Coll coll, const ZMPI_Config *cfg)
{
    const zmpi_algo *a = zmpi_coll_algo_get(coll, cfg->algorithm[coll]);
    return a ? a : table(coll);
}

int ZMPI_Coll_algorithms(ZMPI_Coll coll, int max, int *ids, const char **names, const char **descriptions)
{
    const zmpi_algo *t = table(coll);
    int n = 0;
    for (; t && t->id; t++, n++) {
        if (n < max) {
            if (ids)
                ids[n] = t->id;
            if (names)
                names[n] = t->name;
            if (descriptions)
                descriptions[n] = t->description;
        }
    }
    return n;
}

int ZMPI_Coll_algorithm_from_name(ZMPI_Coll coll, const char *name)
{
    if (!name)
        return -2;
    if (!strcasecmp(name, "mpi"))
        return ZMPI_ALGO_MPI;
    if (!strcasecmp(name, "default") || !strcasecmp(name, "auto"))
        return ZMPI_ALGO_DEFAULT;
    for (const zmpi_algo *t = table(coll); t && t->id; t++)
        if (!strcasecmp(t->name, name))
            return t->id;
    return -2;
}
