# Tests of the kernel source, the kernel driver, the reference and opencl
# backends, and shardpipe conform.  The opencl ones report a skip, with
# the reason, where no OpenCL platform is usable.
KERNEL_TESTS = t/kernels-stages t/kernels-stores
check_PROGRAMS += $(KERNEL_TESTS)
TESTS += $(KERNEL_TESTS)
EXTRA_DIST += t/kernels-configs.h t/plugin-under-test.h t/stages.h

t_kernels_stages_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/kernels
t_kernels_stages_LDADD = $(TEST_LDADD)
t_kernels_stages_LDFLAGS = $(TEST_LINK_FLAGS)
t_kernels_stores_LDADD = $(TEST_LDADD)
t_kernels_stores_LDFLAGS = $(TEST_LINK_FLAGS)

# The device adapters' shared skeleton (device choice, probe, open, the
# plugin entry) over a fake adapter: no device needed.
check_PROGRAMS += t/device-choice
TESTS += t/device-choice
t_device_choice_SOURCES = t/device-choice.c $(KERNEL_ADAPTER_SOURCES)
t_device_choice_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/kernels
t_device_choice_LDADD = $(TEST_LDADD)
t_device_choice_LDFLAGS = $(TEST_LINK_FLAGS)

if HAVE_OPENCL
# Linked with the adapter itself (not the plugin) to reach the driver's
# stage-level hooks.
OPENCL_TESTS = t/opencl-stages t/opencl-stores
check_PROGRAMS += $(OPENCL_TESTS)
TESTS += $(OPENCL_TESTS)
t_opencl_stages_SOURCES = t/opencl-stages.c backends/opencl/opencl.c \
	$(KERNEL_ADAPTER_SOURCES)
nodist_t_opencl_stages_SOURCES = backends/opencl/opencl-kernels.c
t_opencl_stages_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/kernels \
	$(OPENCL_CFLAGS)
t_opencl_stages_LDADD = $(TEST_LDADD) $(OPENCL_LIBS)
t_opencl_stages_LDFLAGS = $(TEST_LINK_FLAGS)
# The stores test goes through the public API and the dlopen'ed plugin.
t_opencl_stores_LDADD = $(TEST_LDADD)
t_opencl_stores_LDFLAGS = $(TEST_LINK_FLAGS)
endif
EXTRA_DIST += t/kernels-stages.c t/kernels-stores.c

# kernel-profile.sh: the reference executor's work profile and the GPU
# targets of issue 26 it measures (about 30 s).
KERNEL_SH_TESTS = t/conform.sh t/kernel-profile.sh
TESTS += $(KERNEL_SH_TESTS)
EXTRA_DIST += $(KERNEL_SH_TESTS)
