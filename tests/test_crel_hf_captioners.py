"""The BLIP/GIT/CLIP code path (spec 02 §7) offline, on tiny randomly initialised models built from configs:
M captions per image, seeded determinism, normalised embeddings, and finite CReL scores at the end of the chain."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
hf = pytest.importorskip("lib.crel.hf_captioners")  # transformers is a core dependency; this never skips in CI


@pytest.fixture(scope="module")
def tokenizer():
    return hf.wordpiece_tokenizer()


@pytest.fixture(scope="module")
def pixels():
    return torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, (3, 3, 32, 32)), dtype=torch.float32)


@pytest.mark.parametrize("builder", ["tiny_blip", "tiny_git"])
def test_captioners_return_m_seeded_captions_per_image(builder, tokenizer, pixels):
    model = getattr(hf, builder)(tokenizer)
    s = hf.SamplingSettings(samples_per_image=4, max_new_tokens=6, seed=3)
    caps = hf.sample_captions(model, tokenizer, pixels, s)
    assert len(caps) == 3 and all(len(c) == 4 for c in caps)
    assert all(isinstance(t, str) for c in caps for t in c)
    assert hf.sample_captions(model, tokenizer, pixels, s) == caps  # same seed, same captions
    other = hf.sample_captions(model, tokenizer, pixels, hf.SamplingSettings(samples_per_image=4, max_new_tokens=6,
                                                                            seed=4))
    assert other != caps


def test_chain_images_to_captions_to_embeddings_to_crel(tokenizer):
    rng = np.random.default_rng(1)
    n_img, m = 40, 4
    pixels = torch.as_tensor(rng.uniform(-1, 1, (n_img, 3, 32, 32)), dtype=torch.float32)
    caps = hf.sample_captions(hf.tiny_blip(tokenizer), tokenizer, pixels,
                              hf.SamplingSettings(samples_per_image=m, max_new_tokens=6))
    clip = hf.tiny_clip(len(tokenizer))
    x = hf.clip_image_features(clip, pixels)
    tok = tokenizer([c for cs in caps for c in cs], padding=True, truncation=True, max_length=16,
                    return_tensors="pt")
    txt = hf.clip_text_features(clip, tok["input_ids"], tok["attention_mask"]).reshape(n_img, m, -1)
    assert np.all(np.isfinite(x)) and np.allclose(np.linalg.norm(x, axis=1), 1, atol=1e-6)
    assert np.allclose(np.linalg.norm(txt, axis=2), 1, atol=1e-6)
    s = hf.EmbeddingCReLSettings(fractions=(0.3, 0.25, 0.25), pca_dim=8, latent_dim=2, n_directions=16, epochs=3,
                                 hidden=(16, 16), alpha=0.1, pgd_starts=4, pgd_steps=3)
    res = hf.crel_on_captioner(x, txt, x, s)  # CReL-CLIP: rho = cos(Dec(z), image embedding)
    assert np.all(np.isfinite(res["crel_per_x"])) and len(res["crel_per_x"]) == n_img - 32
    assert -1 <= res["crel"] <= 1 and -1 <= res["mean_sim"] <= 1 and 0 <= res["coverage_z"] <= 1
