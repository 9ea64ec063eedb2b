"""`rg.nn`: modules with PyTorch's habits.

This file only re-exports; each kind of module lives in the file named for it:

    module.py      Module (registration, traversal, modes, state_dict) and Parameter
    containers.py  Sequential, ModuleList
    linear.py      Linear, Bilinear, Identity
    conv.py        Conv1d, Conv2d, Conv3d, ConvTranspose1d/2d/3d
    pooling.py     MaxPool1d/2d/3d, AvgPool1d/2d/3d, LPPool, FractionalMaxPool, MaxUnpool,
                   adaptive pools
    padding.py     ZeroPad, ConstantPad, ReflectionPad, ReplicationPad, CircularPad (1d-3d)
    upsampling.py  Upsample, UpsamplingNearest2d/Bilinear2d, PixelShuffle, PixelUnshuffle
    shuffle.py     ChannelShuffle
    fold.py        Fold, Unfold
    flatten.py     Flatten, Unflatten
    dropout.py     Dropout, Dropout1d/2d/3d, AlphaDropout, FeatureAlphaDropout
    normalization.py  LayerNorm, RMSNorm, GroupNorm, BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d,
                   LocalResponseNorm, CrossMapLRN2d
    distance.py    CosineSimilarity, PairwiseDistance
    sparse.py      Embedding, EmbeddingBag
    lazy.py        LazyLinear, LazyConv*, LazyBatchNorm*, LazyInstanceNorm*, Uninitialized*
    rnn.py         RNN, LSTM, GRU and their cells
    transformer.py MultiheadAttention, TransformerEncoder(Layer), TransformerDecoder(Layer),
                   Transformer
    activation.py  ReLU, Tanh, Sigmoid, Softmax, LogSoftmax, GELU, SiLU, ELU, PReLU, RReLU,
                   ... (torch.nn's)
    loss.py        MSELoss, CrossEntropyLoss, NLLLoss, BCEWithLogitsLoss, CTCLoss, ... (torch.nn's)
    adaptive.py    AdaptiveLogSoftmaxWithLoss
    functional.py  the functions the modules call (`rg.nn.functional`, `F`)
    init.py        weight initialisation (`rg.nn.init`)

A new layer goes in the file of its kind (or a new file named for it) and its
name is added here.
"""

from . import attention, functional, grad, init, modules, parallel, utils
from .activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from .adaptive import AdaptiveLogSoftmaxWithLoss
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    CTCLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    LinearCrossEntropyLoss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    NLLLoss2d,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
from .module import Buffer, Module, Parameter
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    LayerNorm,
    RMSNorm,
    SyncBatchNorm,
)
from .padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell
from .sparse import Embedding
from .transformer import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from .upsampling import PixelShuffle, PixelUnshuffle, Upsample

__all__ = [
    "Parameter", "Buffer", "Module", "Sequential", "ModuleList", "Identity", "Linear", "Conv2d",
    "MaxPool2d", "AvgPool2d", "Flatten", "Dropout", "ReLU", "Tanh", "Sigmoid", "Softmax",
    "LogSoftmax", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "functional",
    "init",
]
__all__ += [  # activation modules
    "GELU", "SiLU", "Mish", "Softplus", "ELU", "CELU", "SELU", "LeakyReLU", "ReLU6", "Hardtanh",
    "Hardswish", "Hardsigmoid", "Softsign", "LogSigmoid", "Softmin", "GLU", "Tanhshrink",
    "Threshold",
]
__all__ += [  # convolution, pooling, padding, resampling
    "Conv1d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "MaxPool1d",
    "MaxPool3d", "AvgPool1d", "AvgPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d",
    "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
    "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
    "CircularPad2d", "CircularPad3d", "Upsample", "PixelShuffle", "PixelUnshuffle",
]
__all__ += [  # normalisation, embedding, recurrent and attention layers, containers
    "LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "SyncBatchNorm",
    "Embedding", "RNNBase", "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "ModuleDict",
    "ParameterList", "ParameterDict", "Unflatten",
]

# more of torch.nn's layers: activations, dropout variants, ...
from .activation import Hardshrink, PReLU, RReLU, Softmax2d, Softshrink  # noqa: E402
from .distance import CosineSimilarity, PairwiseDistance  # noqa: E402
from .dropout import (  # noqa: E402
    AlphaDropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
)
from .fold import Fold, Unfold  # noqa: E402
from .lazy import (  # noqa: E402
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    LazyLinear,
    UninitializedBuffer,
    UninitializedParameter,
)
from .linear import Bilinear  # noqa: E402
from .normalization import (  # noqa: E402
    CrossMapLRN2d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LocalResponseNorm,
)
from .pooling import (  # noqa: E402
    AdaptiveMaxPool3d,
    FractionalMaxPool2d,
    FractionalMaxPool3d,
    LPPool1d,
    LPPool2d,
    LPPool3d,
)
from .shuffle import ChannelShuffle  # noqa: E402
from .sparse import EmbeddingBag  # noqa: E402
from .upsampling import UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: E402

__all__ += [
    "PReLU", "RReLU", "Hardshrink", "Softshrink", "Softmax2d", "Dropout1d", "Dropout2d",
    "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "InstanceNorm1d", "InstanceNorm2d",
    "InstanceNorm3d", "LocalResponseNorm", "CosineSimilarity", "PairwiseDistance",
    "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "Fold", "Unfold", "Bilinear",
    "ChannelShuffle", "UpsamplingNearest2d", "UpsamplingBilinear2d", "EmbeddingBag",
    "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
    "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
    "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
    "UninitializedParameter", "UninitializedBuffer", "FractionalMaxPool2d", "FractionalMaxPool3d",
    "CrossMapLRN2d",
]

# sequence models: the rest of torch.nn's recurrent and transformer layers
from .rnn import RNNCellBase  # noqa: E402
from .transformer import Transformer, TransformerDecoder, TransformerDecoderLayer  # noqa: E402

__all__ += ["RNNCellBase", "Transformer", "TransformerDecoderLayer", "TransformerDecoder"]

__all__ += [  # the other losses
    "L1Loss", "NLLLoss2d", "BCELoss", "SmoothL1Loss", "HuberLoss", "KLDivLoss",
    "GaussianNLLLoss", "PoissonNLLLoss", "HingeEmbeddingLoss", "SoftMarginLoss",
    "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss", "MarginRankingLoss", "MultiMarginLoss",
    "MultiLabelMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss", "CTCLoss",
    "LinearCrossEntropyLoss", "AdaptiveLogSoftmaxWithLoss",
]

from .parallel import DataParallel  # noqa: E402  (torch.nn.DataParallel: runs the module)

__all__ += ["DataParallel"]

from ._device_arg import accept_device as _accept_device  # noqa: E402

_accept_device(v for v in list(globals().values()) if isinstance(v, type))  # device=
