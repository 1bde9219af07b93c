/*
 * reduce_mean.c - the pyramid reduction's row loops for method mean, one per
 * element type (reduce_rows.h says why they are a file of their own).
 */
#include "reduce_rows.h"

RD_ROWS_METHOD(mean, SP_RD_MEAN)
