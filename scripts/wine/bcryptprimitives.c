/* A stand-in for Windows' bcryptprimitives.dll, which Wine 8.0 (Debian 12's) does not have.
 * Rust's std (1.78 and later) takes its random bytes from ProcessPrng there, so without it no
 * Rust program built for Windows starts under that Wine ("bcryptprimitives.dll not found").
 * This forwards to RtlGenRandom (advapi32's SystemFunction036), which Wine has. Only for
 * running tests under Wine (`make wine-test`); never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG n = len > 0x7fffffff ? 0x7fffffff : (ULONG)len;
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
