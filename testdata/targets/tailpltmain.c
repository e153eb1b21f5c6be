/* tailpltmain.c: calls tailplt.c's entry through the executable's PLT. */
long entry(long n);

int main(int argc, char **argv)
{
	(void)argv;
	return (int)entry(argc + 1000) & 1;
}
