/* Compiled (never linked) as C and as C++, with each include order: the
 * public header must not change how the app sees Vulkan (issue 10, item 6).
 *   VKPROF_FIRST      vkprof.h, then <vulkan/vulkan.h>; else the other order
 *   APP_NO_PROTOTYPES the app itself defines VK_NO_PROTOTYPES (volk users):
 *                     then vkprof.h must not bring the prototypes back */
#ifdef APP_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#ifdef VKPROF_FIRST
#include <vkprof/vkprof.h>
#include <vulkan/vulkan.h>
#else
#include <vulkan/vulkan.h>
#include <vkprof/vkprof.h>
#endif

#ifdef APP_NO_PROTOTYPES
/* A variable of the prototype's name clashes with any prototype in scope. */
static int vkCreateInstance = 1;
int header_order_check(void);
int header_order_check(void)
{
    return vkCreateInstance + (vkprof_version() != 0u);
}
#else
#ifdef VK_NO_PROTOTYPES
#error "including <vkprof/vkprof.h> defined VK_NO_PROTOTYPES for the app"
#endif
/* Both a call and the address of a prototype, as an app using the loader
 * directly has them. */
PFN_vkCreateInstance header_order_create = &vkCreateInstance;
uint32_t header_order_check(const VkInstanceCreateInfo *info, VkInstance *out);
uint32_t header_order_check(const VkInstanceCreateInfo *info, VkInstance *out)
{
    VkResult r = vkCreateInstance(info, NULL, out);
    vkDestroyInstance(*out, NULL);
    return (uint32_t)r + vkprof_version();
}
#endif
