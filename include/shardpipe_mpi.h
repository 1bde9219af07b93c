/*
 * shardpipe_mpi.h - one array written collectively by the ranks of an MPI
 * communicator, one time step (one row of dim 0) at a time.
 *
 * Installed with libshardpipe-mpi (pkg-config shardpipe-mpi), built only
 * when configure found MPI (--with-mpi); libshardpipe itself never depends
 * on MPI.  Every function here is collective over the array's
 * communicator: every rank calls it, in the same order.  The design is
 * doc/design.md §31; the manual shardpipe_mpi(3).
 */
#ifndef SHARDPIPE_MPI_H
#define SHARDPIPE_MPI_H

#include <mpi.h>
#include <shardpipe.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shardpipe_mpi_array shardpipe_mpi_array;

/*
 * Collective over comm.  desc: the whole array (dim 0 = time steps,
 * unbounded or bounded; rank 2 or more).  desc and the strings and
 * attributes it points to must stay valid until shardpipe_mpi_close().
 * Rank 0 creates the directory path (its parent must exist).  The grid
 * of shards of dims 1.. is cut into as many blocks of whole shards as
 * lets the most ranks own one; rank r below the number of blocks owns
 * block r (row-major) and opens one region stream for it
 * (shardpipe_stream_open_region, lo[0] = 0, hi[0] = 0 when dim 0 is
 * unbounded, dims[0].size when bounded) for the whole run; other ranks
 * own none and only send.  On any rank's failure every rank gets the
 * same code and *out = NULL.
 */
SHARDPIPE_API int shardpipe_mpi_open(shardpipe_mpi_array **out, MPI_Comm comm,
		const char *path, const shardpipe_desc *desc);

/*
 * Collective: every rank passes its own subdomain of ONE time step, the
 * box lo[i]..hi[i] (hi exclusive) of dim i + 1 for i = 0 .. rank - 2, and
 * its bytes in row-major order of the box's shape (data may be NULL for
 * an empty box).  Any decomposition: uneven, or empty on some ranks; the
 * boxes together must tile the step exactly, else every rank gets
 * SHARDPIPE_ERR_INVALID_ARGUMENT (naming the ranks that overlap, or the
 * elements missing) and the step is not written.  Rows go to their
 * shards' owners (MPI_Alltoallv), each owner appends the step to its
 * region streams, and rank 0 publishes zarr.json for the rows whose shards
 * every rank has written.  An error on any rank is returned on every rank,
 * and the array then refuses further steps (SHARDPIPE_ERR_CLOSED).
 */
SHARDPIPE_API int shardpipe_mpi_write_step(shardpipe_mpi_array *a,
		const uint64_t *lo, const uint64_t *hi, const void *data);

/*
 * Collective: close every region stream; rank 0 publishes the final rows.
 * An error on any rank is returned on every rank.  Frees a (NULL: nothing
 * to do, SHARDPIPE_OK).
 */
SHARDPIPE_API int shardpipe_mpi_close(shardpipe_mpi_array *a);

/*
 * The message of the last failure of a (never NULL; "" when none), or,
 * with a NULL, of this thread's last failed shardpipe_mpi_open() or
 * shardpipe_mpi_close() (which frees a).
 */
SHARDPIPE_API const char *shardpipe_mpi_message(const shardpipe_mpi_array *a);

/* Seconds this rank spent in the redistribution (packing, MPI_Alltoallv,
 * unpacking) and in its region streams' appends, summed over steps. */
SHARDPIPE_API void shardpipe_mpi_times(const shardpipe_mpi_array *a,
		double *seconds_exchange, double *seconds_append);

#ifdef __cplusplus
}
#endif
#endif
