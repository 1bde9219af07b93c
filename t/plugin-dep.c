/*
 * plugin-dep.c - the library t/plugin-broken depends on.  It is built
 * with the soname of a library that does not exist (t/dist.mk), so the
 * dependency cannot be met at run time.
 */
int sp_test_plugin_dep(void);

int sp_test_plugin_dep(void)
{
	return 0;
}
