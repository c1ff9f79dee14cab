"""A small image-diffusion family (core, shared by notebooks 04 and 02): EDM's preconditioning, loss, EMA and
Heun sampler (`edm`), a UNet with no condition, a class label or a feature vector as its condition (`unet`;
the feature path is DiADM's), checkpointed training and seeded sampling through `lib.train` (`training`), and the
trained CIFAR-10 family that both notebooks read from one set of cache entries (`family`).
"""

from lib.diffusion.edm import Denoiser, edm_loss, guided, heun_sample, noise_levels  # noqa: F401
from lib.diffusion.training import Recipe, build_denoiser, load_denoiser, one_hot, sample, train_denoiser  # noqa: F401
from lib.diffusion.unet import CONDITIONS, UNet  # noqa: F401
