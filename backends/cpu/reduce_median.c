/*
 * reduce_median.c - the pyramid reduction's row loops for method median, one per
 * element type (reduce_rows.h says why they are a file of their own).
 */
#include "reduce_rows.h"

RD_ROWS_METHOD(median, SP_RD_MEDIAN)
