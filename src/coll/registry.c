/* Algorithm lookup over the per-collective tables. */
#include <string.h>
#include <strings.h>

#include "coll/registry.h"

static const char *const coll_names[ZMPI_COLL_COUNT] = {
    "bcast", "scatter", "gather", "allgather", "alltoall", "reduce_scatter", "allreduce", "reduce"};

static const zmpi_coll_table *const tables[ZMPI_COLL_COUNT] = {
    [ZMPI_COLL_BCAST] = &zmpi_bcast_table,
    [ZMPI_COLL_SCATTER] = &zmpi_scatter_table,
    [ZMPI_COLL_GATHER] = &zmpi_gather_table,
    [ZMPI_COLL_ALLGATHER] = &zmpi_allgather_table,
    [ZMPI_COLL_ALLTOALL] = &zmpi_alltoall_table,
    [ZMPI_COLL_REDUCE_SCATTER] = &zmpi_reduce_scatter_table,
    [ZMPI_COLL_ALLREDUCE] = &zmpi_allreduce_table,
    [ZMPI_COLL_REDUCE] = &zmpi_reduce_table,
};

static const zmpi_coll_table *table(ZMPI_Coll coll)
{
    return (unsigned)coll < ZMPI_COLL_COUNT ? tables[coll] : NULL;
}

const char *ZMPI_Coll_name(ZMPI_Coll coll)
{
    return (unsigned)coll < ZMPI_COLL_COUNT ? coll_names[coll] : NULL;
}

const zmpi_algo *zmpi_coll_algo_get(ZMPI_Coll coll, int id)
{
    const zmpi_coll_table *t = table(coll);
    if (!t || id <= 0 || id >= t->count || !t->algo[id].name)
        return NULL;
    return &t->algo[id];
}

int zmpi_coll_algo_pick(const zmpi_call *c, int def)
{
    int id = c->st->cfg.algorithm[c->coll];
    if (zmpi_coll_algo_get(c->coll, id))
        return id;
    return def > 0 ? def : table(c->coll)->def;
}

/* The k-th algorithm of t in listing order (the default first, then the
 * others by id), or 0 when there are fewer. */
static int listed(const zmpi_coll_table *t, int k)
{
    if (k == 0)
        return t->def;
    for (int id = 1; id < t->count; id++) {
        if (id == t->def || !t->algo[id].name)
            continue;
        if (--k == 0)
            return id;
    }
    return 0;
}

int ZMPI_Coll_algorithms(ZMPI_Coll coll, int max, int *ids, const char **names, const char **descriptions)
{
    const zmpi_coll_table *t = table(coll);
    int n = 0, id;
    for (; t && (id = listed(t, n)) > 0; n++) {
        if (n < max) {
            if (ids)
                ids[n] = id;
            if (names)
                names[n] = t->algo[id].name;
            if (descriptions)
                descriptions[n] = t->algo[id].description;
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
    const zmpi_coll_table *t = table(coll);
    for (int id = 1; t && id < t->count; id++)
        if (t->algo[id].name && !strcasecmp(t->algo[id].name, name))
            return id;
    return -2;
}
