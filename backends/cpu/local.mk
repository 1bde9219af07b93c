libshardpipe_core_la_SOURCES += backends/cpu/cpu.c
