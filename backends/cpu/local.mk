libshardpipe_core_la_SOURCES += backends/cpu/cpu.c backends/cpu/gather.c \
	backends/cpu/cpu_gather.h backends/cpu/reduce.c \
	backends/cpu/cpu_reduce.h
# The blosc codec (c-blosc 1.x when configure found it, a refusal
# otherwise).
libshardpipe_core_la_SOURCES += backends/cpu/blosc.c backends/cpu/cpu_blosc.h
