from tether.protocol._v1 import *  # noqa: F403
from tether.protocol._v1 import MAX_SAFE_INTEGER, __all__  # noqa: F401
