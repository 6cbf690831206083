#include "headroom/core/version.h"

namespace headroom {

const char* toolVersion() { return HEADROOM_VERSION; }

} // namespace headroom
