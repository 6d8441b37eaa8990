"""Op builders. Importing this package registers every op type."""
# communication registers Send and Recv; numpy_api and tensor_methods install Tensor's numpy protocols and operators
from graph.ops import communication, numpy_api, tensor_methods  # noqa: F401
from graph.ops.along_axis import *  # noqa: F401,F403
from graph.ops.array import *  # noqa: F401,F403
from graph.ops.basic import assert_, group, identity, no_op, placeholder, print_, stop_gradient
from graph.ops.conversion import constant, static_value
from graph.ops.conversion import convert_to_tensor as convert
from graph.ops.creation import *  # noqa: F401,F403
from graph.ops.einsum import *  # noqa: F401,F403
from graph.ops.indexing import *  # noqa: F401,F403
from graph.ops.math import *  # noqa: F401,F403
from graph.ops.math import cast, matmul
from graph.ops.nn import *  # noqa: F401,F403
from graph.ops.numpy_arrays import add_at
from graph.ops.numpy_call import numpy_call
from graph.ops.padding import *  # noqa: F401,F403
from graph.ops.random import *  # noqa: F401,F403
from graph.ops.reduce import *  # noqa: F401,F403
from graph.ops.shape_ops import *  # noqa: F401,F403
from graph.ops.strings import Field, string_format
from graph.ops.variables import *  # noqa: F401,F403
