/* A stand-in for AMD's HIP runtime (libamdhip64.so), for wgrad's tests only.
 *
 * It is a test double for a boundary that cannot run here: no machine the tests run on has an
 * AMD GPU or ROCm. It exports the HIP functions wgrad_cli/runtime/hip.py calls, with HIP's C
 * signatures, so that the real hip-python loads it through its normal search (hip-python 7.x:
 * the bare name on the loader path; 10.x: $ROCM_PATH/lib) and the real shim runs against it.
 * On its own it proves what crosses the boundary (argument packing, grid, the pointers a launch
 * receives, status codes and error strings), never a kernel: launches compute nothing. With a
 * backend (below) its memory, modules and launches go to wgrad's gfx950 emulator instead, so that a
 * real code object runs end to end through the real hip-python and hip.py.
 *
 * The device: one MI355X-like gfx950 (256 CUs, 288 GB, 2400 MHz). Device memory is host memory.
 * Environment switches (read at each call):
 *   WGRAD_STANDIN_DEVICES=0       no device: hipGetDeviceCount fails with hipErrorNoDevice
 *   WGRAD_STANDIN_LOG=PATH        append one line per launch: symbol, grid, block, LDS, and per
 *                                 kernel argument the pointer's offset in, and size of, its buffer
 *   WGRAD_STANDIN_ABORT=TEXT      a launch of a kernel whose name contains TEXT prints HIP's fault
 *                                 message and calls abort(), as HIP's runtime does on a queue error
 *   WGRAD_STANDIN_LAUNCH_ERROR=N  every launch returns status N (e.g. 719, hipErrorLaunchFailure)
 *   WGRAD_STANDIN_BACKEND=MODULE  hipInit imports the Python module MODULE into the process that
 *                                 loaded the stand-in (through the Python C API that process
 *                                 exports) and calls MODULE.install(ADDRESS), ADDRESS being that of
 *                                 wgradStandinSetBackend; tests/hipstandin/emulated.py hands it the
 *                                 emulator. The log then shows every argument as unallocated.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int hipError_t;
enum {
    hipSuccess = 0, hipErrorInvalidValue = 1, hipErrorOutOfMemory = 2, hipErrorNotInitialized = 3,
    hipErrorNoDevice = 100,
    hipErrorInvalidDevice = 101, hipErrorInvalidImage = 200, hipErrorNoBinaryForGpu = 209,
    hipErrorNotFound = 500, hipErrorIllegalAddress = 700, hipErrorLaunchFailure = 719,
};

typedef struct {
    unsigned hasGlobalInt32Atomics : 1, hasGlobalFloatAtomicExch : 1, hasSharedInt32Atomics : 1,
        hasSharedFloatAtomicExch : 1, hasFloatAtomicAdd : 1, hasGlobalInt64Atomics : 1,
        hasSharedInt64Atomics : 1, hasDoubles : 1, hasWarpVote : 1, hasWarpBallot : 1,
        hasWarpShuffle : 1, hasFunnelShift : 1, hasThreadFenceSystem : 1, hasSyncThreadsExt : 1,
        hasSurfaceFuncs : 1, has3dGrid : 1, hasDynamicParallelism : 1;
} hipDeviceArch_t;

/* hipDeviceProp_tR0600, field for field as HIP 6 and 7 declare it (hip-python's chip.pxd). */
typedef struct {
    char name[256];
    char uuid[16];
    char luid[8];
    unsigned int luidDeviceNodeMask;
    size_t totalGlobalMem, sharedMemPerBlock;
    int regsPerBlock, warpSize;
    size_t memPitch;
    int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate;
    size_t totalConstMem;
    int major, minor;
    size_t textureAlignment, texturePitchAlignment;
    int deviceOverlap, multiProcessorCount, kernelExecTimeoutEnabled, integrated, canMapHostMemory,
        computeMode, maxTexture1D, maxTexture1DMipmap, maxTexture1DLinear, maxTexture2D[2],
        maxTexture2DMipmap[2], maxTexture2DLinear[3], maxTexture2DGather[2], maxTexture3D[3],
        maxTexture3DAlt[3], maxTextureCubemap, maxTexture1DLayered[2], maxTexture2DLayered[3],
        maxTextureCubemapLayered[2], maxSurface1D, maxSurface2D[2], maxSurface3D[3],
        maxSurface1DLayered[2], maxSurface2DLayered[3], maxSurfaceCubemap, maxSurfaceCubemapLayered[2];
    size_t surfaceAlignment;
    int concurrentKernels, ECCEnabled, pciBusID, pciDeviceID, pciDomainID, tccDriver, asyncEngineCount,
        unifiedAddressing, memoryClockRate, memoryBusWidth, l2CacheSize, persistingL2CacheMaxSize,
        maxThreadsPerMultiProcessor, streamPrioritiesSupported, globalL1CacheSupported,
        localL1CacheSupported;
    size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor, managedMemory, isMultiGpuBoard, multiGpuBoardGroupID,
        hostNativeAtomicSupported, singleToDoublePrecisionPerfRatio, pageableMemoryAccess,
        concurrentManagedAccess, computePreemptionSupported, canUseHostPointerForRegisteredMem,
        cooperativeLaunch, cooperativeMultiDeviceLaunch;
    size_t sharedMemPerBlockOptin;
    int pageableMemoryAccessUsesHostPageTables, directManagedMemAccessFromHost, maxBlocksPerMultiProcessor,
        accessPolicyMaxWindowSize;
    size_t reservedSharedMemPerBlock;
    int hostRegisterSupported, sparseHipArraySupported, hostRegisterReadOnlySupported,
        timelineSemaphoreInteropSupported, memoryPoolsSupported, gpuDirectRDMASupported;
    unsigned int gpuDirectRDMAFlushWritesOptions;
    int gpuDirectRDMAWritesOrdering;
    unsigned int memoryPoolSupportedHandleTypes;
    int deferredMappingHipArraySupported, ipcEventSupported, clusterLaunch, unifiedFunctionPointers,
        reserved[63], hipReserved[32];
    char gcnArchName[256];
    size_t maxSharedMemoryPerMultiProcessor;
    int clockInstructionRate;
    hipDeviceArch_t arch;
    unsigned int *hdpMemFlushCntl, *hdpRegFlushCntl;
    int cooperativeMultiDeviceUnmatchedFunc, cooperativeMultiDeviceUnmatchedGridDim,
        cooperativeMultiDeviceUnmatchedBlockDim, cooperativeMultiDeviceUnmatchedSharedMem, isLargeBar,
        asicRevision;
} hipDeviceProp_tR0600;

/* `handle`: the backend's module or function, where one is set. */
typedef struct { unsigned char *image; size_t size; void *handle; } Module;
typedef struct { Module *module; char name[512]; void *handle; } Function;
typedef struct { double seconds; } Event;
typedef struct Allocation { char *ptr; size_t size; struct Allocation *next; } Allocation;

static Allocation *allocations;

/* Where device memory, modules and launches go when set: pointers are the backend's device
 * addresses, and a launch's kernelParams are passed on as the shim packed them. Events stay here:
 * a backend's launch has finished when it returns. */
typedef struct {
    hipError_t (*malloc)(void **ptr, size_t size);
    hipError_t (*free)(void *ptr);
    hipError_t (*copy_in)(void *device, const void *host, size_t n);
    hipError_t (*copy_out)(void *host, const void *device, size_t n);
    hipError_t (*fill)(void *device, int value, size_t n);
    hipError_t (*load)(void **module, const void *image, size_t size);
    hipError_t (*unload)(void *module);
    hipError_t (*function)(void **function, void *module, const char *name);
    hipError_t (*launch)(void *function, unsigned grid, unsigned block, unsigned lds, void **params);
} Backend;

static Backend backend;
static int has_backend;

void wgradStandinSetBackend(const Backend *b) {
    backend = *b;
    has_backend = 1;
}

/* MODULE.install(address of wgradStandinSetBackend), run by the Python that loaded this library:
 * hip-python may call hipInit with the GIL released, so it is taken first. */
static hipError_t install_backend(const char *module) {
    int (*ensure)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    void (*release)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
    int (*run)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "PyRun_SimpleString");
    if (!ensure || !release || !run) {
        fprintf(stderr, "HIP stand-in: WGRAD_STANDIN_BACKEND needs a Python process to load it\n");
        return hipErrorNotInitialized;
    }
    char code[1024];
    snprintf(code, sizeof code, "import importlib; importlib.import_module('%s').install(%llu)", module,
             (unsigned long long)(uintptr_t)&wgradStandinSetBackend);
    int gil = ensure();
    int failed = run(code);  /* -1 after printing the exception */
    release(gil);
    return failed || !has_backend ? hipErrorNotInitialized : hipSuccess;
}

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static Allocation *find(const void *p) {
    for (Allocation *a = allocations; a; a = a->next)
        if ((const char *)p >= a->ptr && (const char *)p < a->ptr + a->size) return a;
    return NULL;
}

hipError_t hipInit(unsigned int flags) {
    (void)flags;
    const char *module = getenv("WGRAD_STANDIN_BACKEND");
    return module && *module && !has_backend ? install_backend(module) : hipSuccess;
}

hipError_t hipGetDeviceCount(int *count) {
    *count = env_int("WGRAD_STANDIN_DEVICES", 1);
    return *count ? hipSuccess : hipErrorNoDevice;
}

hipError_t hipSetDevice(int device) { return device == 0 ? hipSuccess : hipErrorInvalidDevice; }

hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600 *prop, int device) {
    if (device != 0) return hipErrorInvalidDevice;
    memset(prop, 0, sizeof *prop);
    strcpy(prop->name, "AMD Instinct MI355X (HIP stand-in)");
    strcpy(prop->gcnArchName, "gfx950:sramecc+:xnack-");
    prop->totalGlobalMem = 288ull << 30;
    prop->sharedMemPerBlock = 160 << 10;
    prop->maxSharedMemoryPerMultiProcessor = 160 << 10;
    prop->warpSize = 64;
    prop->maxThreadsPerBlock = 1024;
    prop->clockRate = 2400000;  /* kHz */
    prop->multiProcessorCount = 256;
    prop->l2CacheSize = 4 << 20;
    prop->major = 9;
    prop->minor = 5;
    return hipSuccess;
}

hipError_t hipDriverGetVersion(int *v) { *v = 70152802; return hipSuccess; }
hipError_t hipRuntimeGetVersion(int *v) { *v = 70152802; return hipSuccess; }

hipError_t hipDeviceGetPCIBusId(char *bus, int len, int device) {
    if (device != 0) return hipErrorInvalidDevice;
    snprintf(bus, (size_t)len, "0000:75:00.0");
    return hipSuccess;
}

hipError_t hipMalloc(void **ptr, size_t size) {
    if (has_backend) return backend.malloc(ptr, size);
    Allocation *a = malloc(sizeof *a);
    a->ptr = malloc(size ? size : 1);
    if (!a->ptr) { free(a); return hipErrorOutOfMemory; }
    a->size = size;
    a->next = allocations;
    allocations = a;
    *ptr = a->ptr;
    return hipSuccess;
}

hipError_t hipFree(void *ptr) {
    if (has_backend) return backend.free(ptr);
    for (Allocation **a = &allocations; *a; a = &(*a)->next)
        if ((*a)->ptr == ptr) {
            Allocation *gone = *a;
            *a = gone->next;
            free(gone->ptr);
            free(gone);
            return hipSuccess;
        }
    return hipErrorInvalidValue;
}

static hipError_t copy(void *dst, const void *src, size_t n, const void *device) {
    Allocation *a = find(device);
    if (!a || (const char *)device + n > a->ptr + a->size) return hipErrorInvalidValue;
    memcpy(dst, src, n);
    return hipSuccess;
}

hipError_t hipMemcpyHtoD(void *dst, void *src, size_t n) {
    return has_backend ? backend.copy_in(dst, src, n) : copy(dst, src, n, dst);
}

hipError_t hipMemcpyDtoH(void *dst, void *src, size_t n) {
    return has_backend ? backend.copy_out(dst, src, n) : copy(dst, src, n, src);
}

hipError_t hipMemsetD8Async(void *dst, unsigned char value, size_t n, void *stream) {
    (void)stream;
    if (has_backend) return backend.fill(dst, value, n);
    Allocation *a = find(dst);
    if (!a || (char *)dst + n > a->ptr + a->size) return hipErrorInvalidValue;
    memset(dst, value, n);
    return hipSuccess;
}

/* An AMDGPU ELF: its size from the section header table (the last thing in the file). */
hipError_t hipModuleLoadData(Module **module, const void *image) {
    const unsigned char *e = image;
    if (memcmp(e, "\177ELF", 4) != 0 || e[4] != 2 || *(const uint16_t *)(e + 18) != 224) return hipErrorInvalidImage;
    if ((*(const uint32_t *)(e + 48) & 0xff) != 0x4f) return hipErrorNoBinaryForGpu;  /* EF_AMDGPU_MACH gfx950 */
    size_t size = *(const uint64_t *)(e + 40) + (size_t)*(const uint16_t *)(e + 60) * *(const uint16_t *)(e + 58);
    Module *m = calloc(1, sizeof *m);
    m->image = malloc(size);
    memcpy(m->image, image, size);
    m->size = size;
    hipError_t status = has_backend ? backend.load(&m->handle, image, size) : hipSuccess;
    if (status != hipSuccess) {
        free(m->image);
        free(m);
        return status;
    }
    *module = m;
    return hipSuccess;
}

hipError_t hipModuleUnload(Module *m) {
    hipError_t status = has_backend ? backend.unload(m->handle) : hipSuccess;
    free(m->image);
    free(m);
    return status;
}

hipError_t hipModuleGetFunction(Function **function, Module *m, const char *name) {
    size_t n = strlen(name) + 1;
    if (n > sizeof((*function)->name) || !memmem(m->image, m->size, name, n)) return hipErrorNotFound;
    Function *f = calloc(1, sizeof *f);
    f->module = m;
    memcpy(f->name, name, n);
    hipError_t status = has_backend ? backend.function(&f->handle, m->handle, name) : hipSuccess;
    if (status != hipSuccess) {
        free(f);
        return status;
    }
    *function = f;
    return hipSuccess;
}

hipError_t hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, Function *f, int block, size_t lds) {
    (void)f;
    *blocks = block <= 1024 && lds <= (160 << 10) ? 2 : 0;
    return hipSuccess;
}

hipError_t hipModuleLaunchKernel(Function *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned lds, void *stream, void **params, void **extra) {
    (void)stream;
    (void)extra;
    const char *log = getenv("WGRAD_STANDIN_LOG");
    if (log && *log) {
        FILE *out = fopen(log, "a");
        fprintf(out, "launch %s grid %u %u %u block %u %u %u lds %u args", f->name, gx, gy, gz, bx, by, bz, lds);
        for (int i = 0; i < 6; ++i) {
            const char *p = *(char *const *)params[i];
            Allocation *a = find(p);
            if (a) fprintf(out, " %zu/%zu", (size_t)(p - a->ptr), a->size);
            else fprintf(out, " unallocated");
        }
        fprintf(out, "\n");
        fclose(out);
    }
    const char *fault = getenv("WGRAD_STANDIN_ABORT");
    if (fault && *fault && strstr(f->name, fault)) {
        fprintf(stderr, ":0:rocdevice.cpp :3006: Memory access fault by GPU node-2 (Agent handle: 0x1) on address "
                        "0x7f0000000000. Reason: Unknown.\n");
        abort();
    }
    hipError_t status = env_int("WGRAD_STANDIN_LAUNCH_ERROR", hipSuccess);
    return status == hipSuccess && has_backend ? backend.launch(f->handle, gx, bx, lds, params) : status;
}

hipError_t hipEventCreate(Event **event) {
    *event = calloc(1, sizeof **event);
    return hipSuccess;
}

hipError_t hipEventRecord(Event *event, void *stream) {
    (void)stream;
    event->seconds = now();
    return hipSuccess;
}

hipError_t hipEventQuery(Event *event) { (void)event; return hipSuccess; }

hipError_t hipEventElapsedTime(float *ms, Event *start, Event *stop) {
    *ms = (float)((stop->seconds - start->seconds) * 1e3);
    return hipSuccess;
}

static const char *describe(hipError_t e, int name) {
    switch (e) {
    case hipSuccess: return name ? "hipSuccess" : "no error";
    case hipErrorInvalidValue: return name ? "hipErrorInvalidValue" : "invalid argument";
    case hipErrorOutOfMemory: return name ? "hipErrorOutOfMemory" : "out of memory";
    case hipErrorNotInitialized: return name ? "hipErrorNotInitialized" : "initialization error";
    case hipErrorNoDevice: return name ? "hipErrorNoDevice" : "no ROCm-capable device is detected";
    case hipErrorInvalidDevice: return name ? "hipErrorInvalidDevice" : "invalid device ordinal";
    case hipErrorInvalidImage: return name ? "hipErrorInvalidImage" : "device kernel image is invalid";
    case hipErrorNoBinaryForGpu: return name ? "hipErrorNoBinaryForGpu" : "no kernel image is available for execution on the device";
    case hipErrorNotFound: return name ? "hipErrorNotFound" : "named symbol not found";
    case hipErrorIllegalAddress: return name ? "hipErrorIllegalAddress" : "an illegal memory access was encountered";
    case hipErrorLaunchFailure: return name ? "hipErrorLaunchFailure" : "unspecified launch failure";
    default: return name ? "hipErrorUnknown" : "unknown error";
    }
}

const char *hipGetErrorString(hipError_t e) { return describe(e, 0); }
const char *hipGetErrorName(hipError_t e) { return describe(e, 1); }
