/* adq.h: the part of Teledyne SP Devices' ADQAPI (libadq) that vortexgo's
 * Teledyne driver calls, declared for the driver's shim (load.go, shim.c)
 * and the virtual digitizer (instruments/virtual/teledyne.c): the functions'
 * types and ADQAPI's return codes, nothing else.
 *
 * Sources: the function names and signatures and the return codes
 * (ADQ_EOK ... ADQ_EINTERNAL) are ADQAPI's public ones (ADQAPI.h /
 * ADQAPI_definitions.h as published with the SDK and mirrored in public
 * repositories; the ADQ3 series user guide), as is the revision check
 * ADQAPI_ValidateVersion(major, minor) -> 0 compatible, -1 incompatible, -2
 * backward compatible. vortex's driver (src/vortex/driver/teledyne.cpp)
 * shows which functions it calls. Nothing is copied: the declarations are
 * written here.
 *
 * NO STRUCTURES, NO ENUMERATIONS. ADQAPI's struct ADQParameters, the small
 * structures passed by pointer (ADQInfoListEntry, struct ADQP2pStatus,
 * struct ADQOverflowStatus) and the enumeration values written into them
 * (ADQ_EVENT_SOURCE_*, ADQ_FUNCTION_* ...) may change between ADQAPI
 * releases, and their header ships only with Teledyne's SDK, so the driver
 * declares none: it takes their layouts and values from a table generated
 * from the installed header (layout.go, python/vortexgo/adq_layout.py), and
 * passes the structures as opaque memory of the table's size (void* below).
 *
 * The return codes stay here: ADQAPI documents them as the stable return
 * values of its functions (negative errno-like codes, ADQ_EOK = 0), the
 * same in every release the driver targets.
 */
#ifndef VG_ADQ_H
#define VG_ADQ_H

#include <stdint.h>

#define ADQ_EOK (0)
#define ADQ_EINVAL (-1)
#define ADQ_EAGAIN (-2)
#define ADQ_EOVERFLOW (-3)
#define ADQ_ENOTREADY (-4)
#define ADQ_EINTERRUPTED (-5)
#define ADQ_EIO (-6)
#define ADQ_EEXTERNAL (-7)
#define ADQ_EUNSUPPORTED (-8)
#define ADQ_EINTERNAL (-9)

/* The functions, their structures opaque (void*). */
typedef int (*vg_adq_validate_version_fn)(int major, int minor);
typedef void* (*vg_adq_create_fn)(void);
typedef void (*vg_adq_destroy_fn)(void* cu);
typedef int (*vg_adq_enable_error_trace_fn)(void* cu, unsigned int level, const char* dir);
typedef int (*vg_adq_list_devices_fn)(void* cu, void** list /* ADQInfoListEntry* */, unsigned int* n);
typedef int (*vg_adq_setup_device_fn)(void* cu, int index);
typedef int (*vg_adq_initialize_parameters_fn)(void* cu, int num, int id, void* parameters);
typedef int (*vg_adq_set_parameters_fn)(void* cu, int num, void* parameters);
typedef int (*vg_adq_read_user_register_fn)(void* cu, int num, int ul, uint32_t reg, uint32_t* data);
typedef int (*vg_adq_write_user_register_fn)(void* cu, int num, int ul, uint32_t reg, uint32_t mask, uint32_t data, uint32_t* ret);
typedef int (*vg_adq_start_fn)(void* cu, int num);
typedef int (*vg_adq_stop_fn)(void* cu, int num);
typedef int (*vg_adq_wait_p2p_fn)(void* cu, int num, void* status /* struct ADQP2pStatus* */, int timeout_ms);
typedef int (*vg_adq_unlock_p2p_fn)(void* cu, int num, int channel, uint64_t mask);
typedef int (*vg_adq_get_status_fn)(void* cu, int num, int id, void* status);

#endif
