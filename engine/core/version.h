/* The engine's version, as `kafkaiq version`, the Lua module and the
 * engine's own client (ApiVersions' client_software_version) report it. */
#ifndef KIQ_CORE_VERSION_H
#define KIQ_CORE_VERSION_H

#define KIQ_VERSION "0.1.0"

#endif
