/*
 * zring — symbol export macro. The library is built with -fvisibility=hidden;
 * every public declaration carries ZR_API so it is exported from the shared
 * object (and harmlessly visible in the static archive).
 */
#ifndef ZR_EXPORT_H
#define ZR_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define ZR_API __attribute__((visibility("default")))
#else
#define ZR_API
#endif

#endif /* ZR_EXPORT_H */
