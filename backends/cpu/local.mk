libshardpipe_core_la_SOURCES += backends/cpu/cpu.c backends/cpu/gather.c \
	backends/cpu/cpu_gather.h backends/cpu/reduce.c \
	backends/cpu/cpu_reduce.h backends/cpu/reduce_rows.h \
	backends/cpu/reduce_median.c backends/cpu/reduce_mean.c \
	backends/cpu/reduce_min.c backends/cpu/reduce_max.c \
	backends/cpu/reduce_decimate.c backends/cpu/reduce_second_max.c \
	backends/cpu/reduce_second_min.c
# The blosc codec (c-blosc 1.x when configure found it, a refusal
# otherwise).
libshardpipe_core_la_SOURCES += backends/cpu/blosc.c backends/cpu/cpu_blosc.h
