/*
 * reduce_second_max.c - the pyramid reduction's row loops for method second_max, one per
 * element type (reduce_rows.h says why they are a file of their own).
 */
#include "reduce_rows.h"

RD_ROWS_METHOD(second_max, SP_RD_SECOND_MAX)
