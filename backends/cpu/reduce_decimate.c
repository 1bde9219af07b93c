/*
 * reduce_decimate.c - the pyramid reduction's row loops for method decimate, one per
 * element type (reduce_rows.h says why they are a file of their own).
 */
#include "reduce_rows.h"

RD_ROWS_METHOD(decimate, SP_RD_DECIMATE)
