#!/usr/bin/env python3
"""Deterministic synthetic corpus generator for benchmarking ``ingest``.

Writes raw text dumps of the three page kinds in the shape of the seed pages
(``seeds/000_*`` topic-page, ``seeds/001_*`` topic-list, ``seeds/004_*`` item-page):

* ``tp_NNNNNN.txt`` topic pages (mostly flattened onto one line, ~20% with line breaks,
  some of those CRLF), 20-60 listings each, markdown escapes as on the site;
* ``tl_NNNNNN.txt`` topic lists for ~40% of topics (a filtered subset of the listings,
  English original title line + Chinese summary line each);
* ``ip_NNNNNN.txt`` item pages for ~10% of resources, with 3-6 related entries;

about 20% of topics (never the first) are saved in parts, as a crawler that follows the
topic's pagination saves them: ``tp_NNNNNN_pK.txt``, 2-4 pages of 10-30 listings each, each
page with the topic's header and footer and its ranks continuing from the page before; such
a topic's topic list is in parts too (``tl_NNNNNN_pK.txt``, each with the description and
stats lines, the entries continuing). ``NNNNNN`` numbers the topic pages (topic lists) of
the corpus, ``K`` the part;

with realistic cross-listing (a resource is listed on about 8 topic pages on average),
near-duplicate summaries (~5% of appearances reword one clause), a few distinct resources
sharing the same Chinese title, and mixed encodings (UTF-8, UTF-8 with BOM, UTF-16 with
BOM, GB18030).  ``expected.json`` beside the dumps holds the ground-truth counts.

About 8% of resources were written in Chinese: their original title is their Chinese title,
which a topic list shows on its title line and an item page shows again on the
original-title line or leaves out (half the time each); many such titles are long or end
with a question mark, as a summary may. The first page of each kind and about 4% of the
others are saved HTML (``.html``, in a shape drawn per page: see ``bench/corpus_html.py``);
the text dump each stands for is written to ``twins/`` beside ``dumps/``, for checks.

Usage::

    python bench/gen_corpus.py --out DIR --size 25MB [--seed 0]

Sizes: ``500KB``, ``1MB``, ``25MB``, ``1GB`` (decimal units; ``MiB``/``GiB`` are binary) or a
plain byte count.  The dump files written total the target within about +-5%.  Same seed
and size give byte-identical output.  Only the standard library is used; memory is bounded
by the resource pool (about one resource per 8 topic-page listings), not by corpus size.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from random import Random

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_html  # beside this script

_HAN = re.compile(r"[\u4e00-\u9fff]")


def _has_han(text: str) -> bool:
    return _HAN.search(text) is not None


MARKER = ".gen_corpus"
EXPECTED = "expected.json"
#: The dumps go into this sub-folder, so ``ingest run DIR/dumps`` sees nothing else.
DUMPS = "dumps"
#: The text dump each saved-HTML page of ``dumps/`` stands for, by the page's stem.
TWINS = "twins"
GENERATOR_VERSION = 3

SITE_URL = "https://oplearnx.com"
TOPIC_URL = SITE_URL + "/topics/"
FOOTER_NOTICE = "中文标题与摘要由模型根据原文生成，以原文为准。"
FOOTER_SOURCE = "来源：LearnMap · 学径（https://oplearnx.com）"
ORDER_NOTE = "按推荐学习顺序：越基础、直观越靠前，越系统、深入越靠后"
SECTION = "## 推荐学习顺序"

KINDS = ("博客", "帖子", "项目", "教程", "课程", "书籍")
KIND_WEIGHTS = (52, 15, 11, 12, 6, 4)
BLOG, POST, PROJECT, TUTORIAL, COURSE, BOOK = range(6)
LEVELS = ("入门", "进阶", "深入")

ENCODINGS = ("utf-8", "utf-8-sig", "utf-16", "gb18030")

MEAN_TOPIC_PAGES_PER_RESOURCE = 8.0
MIN_LISTINGS, MAX_LISTINGS = 20, 60
TOPIC_LIST_SHARE = 0.40
ITEM_PAGE_SHARE = 0.10
VARIANT_SHARE = 0.05
CHINESE_SHARE = 0.08  # resources written in Chinese (their original title is Chinese)
HTML_SHARE = 0.04  # pages saved as HTML
MULTILINE_SHARE = 0.20
PARTED_SHARE = 0.20  # topics saved in 2-4 parts (a paginated topic page, and its list)
PAGE_SIZES = (10, 12, 15, 20, 24, 30)  # listings a page of a paginated topic shows
SUMMARY_MIN, SUMMARY_MAX = 140, 400
# Rough bytes of dumps per topic (topic page + its share of topic lists and item pages);
# only used to size the resource pool, the stop rule measures what was really written.
EST_UNIT_BYTES = 35_500

# Markdown escapes the site applies to titles and summaries on topic pages.
_MD_ESCAPE = str.maketrans({c: "\\" + c for c in "_+[]()#"})

# --------------------------------------------------------------------------------------
# Vocabulary (drawn from the seed pages: their nouns, verbs, clause shapes and names).
# --------------------------------------------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    """Items separated by ``|`` (or by white space when there is no ``|``)."""
    parts = text.split("|") if "|" in text else text.split()
    return tuple(p.strip() for p in parts if p.strip())


def _pairs(text: str) -> tuple[tuple[str, str], ...]:
    """One ``Chinese || English`` pair per line."""
    out = []
    for line in text.strip().splitlines():
        zh, en = line.split("||")
        out.append((zh.strip(), en.strip()))
    return tuple(out)


# (Chinese, English) technical noun phrases.
NOUNS = _pairs(
    """
    推理性能 || inference performance
    显存占用 || memory footprint
    张量并行 || tensor parallelism
    流水线并行 || pipeline parallelism
    连续批处理 || continuous batching
    投机解码 || speculative decoding
    KV 缓存 || KV cache
    注意力内核 || attention kernels
    优化器状态 || optimizer state
    混合精度量化 || mixed-precision quantization
    分布式训练 || distributed training
    模型服务 || model serving
    算力调度 || compute scheduling
    GPU 共享 || GPU sharing
    性能剖析 || profiling
    预训练 || pretraining
    强化学习 || reinforcement learning
    增量权重同步 || delta weight sync
    长上下文 || long context
    解码吞吐 || decode throughput
    首 token 延迟 || time to first token
    数据加载 || data loading
    检查点保存 || checkpointing
    集群调度 || cluster scheduling
    内存带宽 || memory bandwidth
    稀疏注意力 || sparse attention
    专家并行 || expert parallelism
    容错训练 || fault-tolerant training
    按位确定性 || bitwise determinism
    文件 I/O || file I/O
    算子融合 || operator fusion
    编译优化 || compiler optimization
    低精度训练 || low-precision training
    推理引擎 || inference engines
    多卡推理 || multi-GPU inference
    本地部署 || local deployment
    向量检索 || vector search
    评测方法 || evaluation methods
    智能体编排 || agent orchestration
    提示缓存 || prompt caching
    机密计算 || confidential computing
    前缀缓存 || prefix caching
    分片策略 || sharding strategies
    通信重叠 || communication overlap
    梯度累积 || gradient accumulation
    激活重计算 || activation recomputation
    权重量化 || weight quantization
    模型蒸馏 || model distillation
    批量推理 || batch inference
    请求路由 || request routing
    弹性伸缩 || autoscaling
    冷启动 || cold starts
    存储平台 || storage platforms
    多租户隔离 || multi-tenant isolation
    调度延迟 || scheduling latency
    内核调优 || kernel tuning
    算力利用率 || compute utilization
    微调流程 || fine-tuning workflows
    推理成本 || inference cost
    缩放定律 || scaling laws
    """
)

# Chinese-only nouns (no spaces) for topic names and descriptions.
TOPIC_NOUNS = _words(
    """
    模型服务 算力调度 并行计算 底层优化 推理加速 分布式训练 显存管理 数据管线 向量检索 检索增强
    智能体 提示工程 模型评测 对齐训练 强化学习 多模态 语音识别 图像生成 代码生成 知识图谱
    推荐系统 时间序列 联邦学习 隐私计算 模型压缩 量化部署 编译器 内核开发 集群运维 存储系统
    网络通信 边缘部署 移动端推理 安全防护 数据标注 特征工程 实验管理 持续训练 长上下文 注意力机制
    混合专家 稀疏计算 低精度训练 微调方法 蒸馏技术 开源模型 基准测试 成本优化 容错机制 调度系统
    文本分类 信息抽取 机器翻译 语义搜索 表格理解 文档解析 机器人控制 自动驾驶 医学影像 科学计算
    图神经网络 因果推断 概率编程 优化算法 损失函数 数据合成 评估指标 可解释性 鲁棒性
    """
)
TOPIC_NAME_PATTERNS = _words(
    "{a}与{b} {a}中的{b} 面向{a}的{b} {a}{b}实战 {a}与{b}进阶 {a}{b}入门 {a}和{b} {a}里的{b}"
)
DESC_PATTERNS = _words(
    """
    学习{a}、{b}与{c}，适合{d}的{e}。
    介绍{a}与{b}的核心方法，并覆盖{c}，帮助{d}的{e}快速上手。
    围绕{a}整理{b}、{c}方面的资料，适合{d}的{e}。
    从{a}讲到{b}和{c}，面向{d}的{e}。
    系统梳理{a}、{b}以及{c}的实践经验，适合{d}的{e}阅读。
    汇集{a}与{b}相关的教程和工程经验，兼顾{c}，适合{d}的{e}。
    """
)
AUDIENCE_DESC = _words(
    """
    维护训练和推理基础设施 从事模型部署 刚入门深度学习 负责线上服务稳定性 搭建数据平台
    研究大模型训练 做应用开发 关注系统性能 管理GPU集群 编写高性能内核 设计评测体系 构建智能体应用
    """
)
AUDIENCE_ROLE = _words("人员 工程师 研究者 读者 开发者 团队")
CATEGORIES = _words(
    """
    部署与推理优化 模型训练 数据与评测 智能体与应用 基础设施 多模态 算法基础 工程实践 安全与对齐
    开源生态 硬件与算力 检索与知识
    """
)
SLUG_WORDS = _words(
    """
    model serving compute inference training data vector search agent kernel gpu cuda distributed
    parallel quantization memory cache scheduling evaluation retrieval pipeline compiler runtime
    systems storage network cluster edge mobile privacy security alignment reasoning multimodal
    speech vision graph tabular recsys robotics optimization attention experts sparse finetuning
    distill benchmark cost fault tolerance prompting tools embedding ranking llm rl compression
    deployment monitoring observability
    """
)
NAME_PRE = _words(
    """
    Apex Aster Blaze Bolt Cinder Cobalt Delta Ember Flux Forge Glide Helix Hydra Ion Jade Kite
    Lumen Mosaic Nimbus Nova Onyx Orbit Pallas Photon Pulse Quill Quasar Raptor Relay Sable Shard
    Sierra Strata Tensor Titan Umbra Vector Vortex Warp Zephyr Kvik Ling Hum Nano Lattice Torch
    Mega Deep
    """
)
NAME_SUF = _words(
    """
    Serve Infer Train Flow Mesh Cache Scale Kernel Opt Sync Gate Stack Pipe Lab Core Run Shift
    Dist Fuse Batch Grid Link Store Quant Spec Loop Net Base Bench Scope IO Neuron
    """
)
REAL_TECH = _words(
    """
    PyTorch CUDA vLLM SGLang llama.cpp Triton JAX Kubernetes FlashAttention MLX Transformers
    DeepSpeed Megatron-LM TensorRT-LLM OpenXLA Ray NCCL XLA Diffusers safetensors torch.compile
    FSDP2 DTensor GGUF Ollama LoRA ROCm Metal
    """
)
HARDWARE = _words(
    "RTX 3090|RTX 5090|RTX 4090|H200|H100|B200|A100|MI300X|V100|DGX Spark|MacBook Pro M5 Max"
    "|Mac Studio|AWS Trainium|TPU v6e|R9700|RTX 3080 20GB|L40S|Jetson Orin|Gaudi 3|GB200"
)
CODE_IDS = _words(
    """
    torch_xla key_averages() parallel_io compute_cap KVIKIO_COMPAT_MODE torch.device("tpu")
    fused_adamw num_workers max_batch_size gds_stats CUFILE_STATS_LEVEL min_io_threshold_size_kb
    cuda_graph shard_map()
    """
)
CODE_WORDS = _words(
    "batch cache stats level mode size threshold worker queue shard group rank stream graph kernel"
    " pool page block"
)
FIRST_NAMES = _words(
    """
    Alex Maya Jon Priya Kenji Lena Omar Sara Diego Ingrid Wei Yuki Tomás Anika Rafael Chloé Pavel
    Keita Aman Erik Evan Oliver Andrew Ekin David Hagay Rémi Pedro Aritra Will Rob Aleksey Hrachya
    Chaomin Elliot Kayvon Percy Nadia Ivan
    """
)
LAST_NAMES = _words(
    """
    Watanabe Belevich Shanbhag Bernhardsson Conrad Kennon Hoyle Karabulut Lifshitz Sharon Reboul
    Cuenca Gosthipaty Constable Torres Vlasenko Lee Hakobyan Yu Arledge Fatahalian Liang Hashimoto
    Olukotun Novak Moreau Okafor Lindqvist Tanaka Silva Kowalski Haddad Petrov Nakamura Fischer
    Rossi Dubois Kim
    """
)
PUBLISHERS: dict[int, tuple[str, ...]] = {
    BLOG: _words(
        "NVIDIA 技术博客|Hugging Face|Google 开发者博客|OpenAI 工程博客|Cloudflare 博客"
        "|Latent Space|PyTorch 博客|AWS 机器学习博客|Meta 工程博客|Databricks 博客|Modal 博客"
        "|Anyscale 博客|SemiAnalysis"
    ),
    POST: _words("r/LocalLLaMA|r/MachineLearning|r/CUDA|r/hardware|Hacker News"),
    PROJECT: _words("GitHub|Hugging Face"),
    TUTORIAL: _words("PyTorch|NVIDIA|Hugging Face|Google Cloud|AWS"),
    COURSE: _words("斯坦福大学 卡内基梅隆大学 麻省理工学院 加州大学伯克利分校 清华大学"),
    BOOK: _words("Manning Publications|O'Reilly Media|No Starch Press|Packt"),
}
UNIV_EN = {
    "斯坦福大学": "Stanford",
    "卡内基梅隆大学": "CMU",
    "麻省理工学院": "MIT",
    "加州大学伯克利分校": "UC Berkeley",
    "清华大学": "Tsinghua",
}
ORDINALS_ZH = _words("一 二 三 四 五")
ORDINALS_ROMAN = _words("I II III IV V")
SEASONS = (("春", "Spring"), ("秋", "Fall"), ("夏", "Summer"))
RATINGS = ("值得看", "值得看", "值得看", "必读", "可略读")

# Title templates: (Chinese, English).  Slots: {P} {Q} product names, {R} real tech,
# {H} hardware, {N} {M} noun pairs, {K} small number, {O}/{OR} ordinal (zh/roman),
# {PER} person, {C} code identifier, {V} version; courses {U} {UE} {CODE} {Y} {S} {SE}.
TITLES: dict[int, tuple[tuple[str, str], ...]] = {
    BLOG: _pairs(
        """
        在 {H} 上提升{N}的 {K} 种方法 || {K} Ways to Boost {N} on {H} with {P}
        解锁{P}连续批处理中的{N} || Unlocking {N} in {P} continuous batching
        {P}：在 {H} 上运行 {R} 模型更简单了 || {P}: running {R} models on {H} got easier
        用 {P} 控制 GPU 如何共享{N} || Control How Your GPU Shares {N} with {P}
        使用 {P} 扩展{N} || Scale {N} with {P}
        {P} 与 {Q} 发布面向 {R} 优化的{N}芯片 || {P} and {Q} unveil {R}-optimized {N} chip
        为什么{N}决定{M}——{PER}，{P} || Why {N} Shapes {M} — {PER}, {P}
        {P} 中的跨请求{N}问题（{K} 条响应） || Cross-request {N} exposure in {P} ({K} responses)
        将 {P} 集成进 {Q} 并为 {H} 优化{N} || Integrating {P} into {Q} and Optimizing {N} for {H}
        用一个 {P} 传输万亿参数：{Q} 中的{N} || Shipping a Trillion Parameters With {P}: {N} in {Q}
        {R} {V} 中的{N}与 {P} || {N} and {P} in {R} {V}
        {R} PR #{K}：{P} 带来的{N} || {R} PR #{K}: {N} from {P}
        {P} (beta) 发布：{N}与{M} || {P} (beta) is out: {N} and {M}
        同样的 {H}，{N}多出 {K}%：{P} 的做法 || Same {H}, {K}% More {N}: How {P} Does It
        为 {K} 亿用户扩展 {P} 的{N}（第{O}部分） || Scaling {P} {N} for {K}00M users (Part {OR})
        """
    ),
    POST: _pairs(
        """
        在 {H} 上对比 {P} 与 {Q}：{N}的实际表现 || {P} vs {Q} on {H}: real-world {N}
        我为{N}做了一个 {R} 实现 {P}——希望获得反馈 [P] || I built {P}, a {R} take on {N} [P]
        {H} 解锁 {P} 后{N}提升 {K}% || {H} with {P} unlocked: {K}% faster {N}
        试过在 {H} 上用 {P} 做{N}的人：{M}有区别吗？ || Tried {P} for {N} on {H}? Any {M} gain?
        搭建 {P} 开发环境的笔记：{N}、{M}与 {C} [P] || Setting up {P}: {N}, {M} and {C} [P]
        我们在用 {P} 解决{N}，真正的问题是{M}吗？[D] || Is {P} solving {N} or is it {M}? [D]
        为 {K} 万元预算的 {P} 装机：{H} 对比 {Q} || Building a {P} rig on a {K}k budget: {H} vs {Q}
        {H} 上运行 {P}：{R}、{Q} 的{N}对比 || Running {P} on {H}: {R} vs {Q} {N}
        """
    ),
    PROJECT: _pairs(
        """
        {P}：{R} 的高性能{N}框架 || {P}: a high-performance {N} framework for {R}
        {P}：一个手工调优的 C++/{R} {N}库 [P] || {P}: a hand-tuned C++/{R} library for {N} [P]
        我构建了一个在 {H} 上以 {K} token/s 运行 {Q} 的引擎 {P} || {P}: {Q} at {K} tok/s on {H}
        """
    ),
    TUTORIAL: _pairs(
        """
        剖析 {P}（第{O}部分）：在 {H} 上进行{N} || Dissecting {P} (Part {OR}): {N} on {H}
        {P} 中的{N}——视频教程 || {N} in {P} — Video Tutorial
        用 {P} 学{N}（{R} 入门） || Learn {N} with {P} ({R} basics)
        {R} 中的 {C} 与 {P} || Using {C} with {P} in {R}
        如何用 {P} 在 Python 中实现{N} || How to Do {N} in Python with {P}
        """
    ),
    COURSE: _pairs(
        """
        {U} {CODE}：{N}与{M}（{Y} {S}） || {UE} {CODE}: {N} and {M} ({SE} {Y})
        {N}系统：算法与实现（{Y} {S}，{CODE}） || {N} Systems: Algorithms and Practice ({CODE}, {Y})
        """
    ),
    BOOK: _pairs(
        """
        {P} 实战：{N}与{M} || {P} in Action: {N} and {M}
        面向{N}的 {R} 与 {P} || {R} and {P} for {N}
        """
    ),
}

# Summary openings per kind.  {PUB} is the resource's publisher.
OPENINGS: dict[int, tuple[str, ...]] = {
    BLOG: _words(
        """
        这是 {PUB} 的一篇文章，
        | {PUB} 于 {DATEZH} 发布的文章，作者为 {PER}、{PER2}，
        | {PUB}，作者 {PER}，{DATEZH} 发布。
        | 博客文章，
        | 这是 {PUB} 与 {Q} 协同发布的一篇报告，
        | {PUB} 的访谈节目，主持人与 {P} 的 {PER} 展开对谈，
        | {PUB} 系列第{O}部分，作者 {PER}，
        | 这是 {Q} 的发布公告，
        | {PER} 在 {PUB} 上撰写的长文，
        | {PUB} 上由 {PER} 撰写、{DATEZH} 发布的企业类文章，
        """
    ),
    POST: _words(
        """
        这是 {PUB} 的一篇社区帖子，
        | 一篇 {PUB} 社区帖子，
        | 这是一篇社区提问帖，
        | 这是一篇社区基准测试帖，
        | {PUB} 的一篇讨论帖（[D] 表示讨论类）。
        | 发帖者准备在 {H} 上搭建 {P}，
        | {PUB} 上关于 {Q} 的经验分享，
        | 帖子转述原作者 u/{HANDLE} 的工作，
        """
    ),
    PROJECT: _words(
        """
        这是一个 GitHub 项目（{P}）的介绍，
        | {P} 是用于在自有 GPU 上私有运行 {Q} 的项目，
        | 这是一个开源项目仓库，
        | {PUB} 仓库页面，内容为 {P} 的说明，
        | 该项目把 {R} 移植到 {H} 上，
        | 开源的 {P} 仓库，
        """
    ),
    TUTORIAL: _words(
        """
        {PUB} 官方中级教程，
        | 这是关于 {P} 的系列文章第{O}篇，
        | {PUB} 官方视频教程系列的开篇页，
        | {PUB} 文档中的 {P} 总览页，
        | 面向初学者的 {R} 教程，
        | {PER} 编写的 {P} 上手指南，
        """
    ),
    COURSE: _words(
        """
        {PUB} {Y} 年{S}季 {CODE} 课程主页，授课教师为 {PER} 和 {PER2}，
        | 这是 {PUB} {CODE} 的 {Y} 年{S}季课程网站。
        | {CODE} 课程页面（{PUB}），
        | {PER} 主讲的 {CODE} 课程，
        """
    ),
    BOOK: _words(
        """
        这是 {PUB} 出版的书，作者 {PER}，出版日期 {DATE}，{K3} 页，
        | {PUB} 出版的新书，作者为 {PER}，
        | {PER} 的新书，
        | 一本讲 {P} 的技术书（{PUB}），
        """
    ),
}

# Clause shapes: connector + core.  Cores carry slots so every resource fills them
# with its own names, numbers and nouns.
CONNECTORS = _words(
    "文章介绍|文中说明|文中称|作者指出|帖中称|README 说明|页面还给出|内容还包括|正文说明|作者称"
    "|演讲讨论了|文中举例说|文章还提到|评论者回复称|材料中还说明|文中给出|课程介绍了|简介称|讲者说明"
    "|作者还比较了|此外|同时|另外|其中|文中还说|作者强调|结果显示|测试表明|报告称|据作者介绍"
    "|帖子还提到|演讲还涉及|书中讲解了|教程演示了|项目主页写道"
)
CORES = _words(
    """
    {P} 如何把{N}与{M}结合起来
    | 在 {H} 上{N}从 {X1} 降至 {X2}
    | {P} 与 {Q} 各自的{N}路径
    | 基线{N}为 {X1}，逐项叠加后提升 {PCT}
    | 在 {K} 块 GPU 上把{N}开销降至约 {PCT}
    | {P} 自 {DATEZH} 起进入公开测试
    | 可通过 pip install {PKG} 安装
    | 用 {C} 判断{N}是否生效
    | {P} 在{N}下的表现优于 {Q}
    | {R} 已原生支持 {P} 的{N}
    | {N}、{M}以及{L}等主题
    | {P} 把每一层切分到 {K} 块卡上以避免{N}时的轮流等待
    | {P} 比 {R} 的{N}快约 {X3} 倍
    | {N}显著优于 {Q}，从设计到量产历时 {K} 个月
    | 如何配置 {P} 并阅读{N}表格
    | {N}受{M}限制，{L}占主要执行时间
    | {P} 在 {Q} 与 {R} 中的应用
    | {H} 上的{N}约为 {X1}，{M}约为 {X2}
    | {P} 的{N}与{M}的区别
    | {Q} 团队以 {R} 上的真实模型排查{N}并向上游修复
    | {P} 提供 OpenAI 与 Anthropic 兼容 API 和{N}工具
    | {N}需在读取时解决冲突，而{M}依赖 {P} 的共享状态
    | {P} 从零实现{N}并配薄 Python 层
    | {K} 个样例上 {P} 与 {Q} 的{N}不一致
    | 先做{N}，再用{M}与 {P} 搜索更短的配置
    | {P} 的{N}覆盖 {X1} 至 {X2} 的范围
    | {P} 让用户按需买卖{N}并从{M}到{L}进行程序化控制
    | {N}与{M}是三件不同的事
    | 为 {P} 分配专用资源后，{N}无需等待{M}排空
    | {P} 通过{N}、{M}和{L}来防止回退
    | {PER} 维护的 {P} 对{N}做了系统评测
    | {P} 的示例代码来自 {Q} 仓库
    | {N}通过分片{M}来降低显存占用
    | 以 {H} 为例说明{N}的成本考量
    | {P} 在 {H} 上跑 {K} 路并发时{N}约为 {X1}
    | {P} 的 PR #{K3} 修复了{N}中的问题
    | {P} 的 API 形如 {C}，默认值为 {X1}
    | 第 {K}. [{ENW}] 节给出{N}的示例
    | {P} 使用 C++ 与 {R} 实现{N}
    | {P}（[P] 表示项目分享）面向{N}场景
    | 用 {K} 个真实案例比较 {P} 与 {Q} 的{N}和{M}
    | 在 {H} 上以 {X1} 的速度运行 {Q}，同时服务 {K} 个会话
    | {P} 的{N}在 {K3} 步内保持稳定
    | 从{N}讲到{M}，最后落到 {P} 的{L}
    | 把{N}视为大宗商品市场，指出 {P} 只决定{M}的上限
    | {P} 把{N}的状态压缩到原来的一半左右
    | {Q} 的{N}仍在调优，暂不可用
    | 如何用 {P} 的 {C} 接口排查{N}
    | {N}与{M}之间约 {PCT} 的差异来自 {P}
    | 对故意未测试的{N}说明原因，并可选择 {P} 的版本
    | 向做{N}或{M}测试的人征询 {P} 的使用情况
    | {P} 对应用透明地强制{N}，支持{M}与{L}两种模式
    | 附带 {K} 组原始输出与脚本，便于复现 {P} 的{N}结果
    | {N}只放开 {R} 的部分路径，{P} 本来就没有锁定
    | {PER} 与 {PER2} 讨论了 {P} 的{N}路线图
    """
)
ENDINGS = _words(
    """
    适合关注{N}的工程师阅读。
    | 适合在 {H} 上做{N}的人阅读。
    | 适合正在规划{N}与{M}的读者。
    | 面向希望了解 {P} 的{N}用户。
    | 工程与基础设施方向的读者可参考。
    | 适合从事{N}、关注{M}的人阅读。
    """
)
EN_WORDS = _words("setup tuning serving quantize profile deploy bench cache")

# (before, after) rewordings used to make near-duplicate variants of a summary.
REWORDINGS = tuple(
    (w[: w.index("/")], w[w.index("/") + 1 :])
    for w in _words(
        """
        介绍/讲解 说明/指出 提升/提高 显著/明显 包括/包含 适合/适用于 使用/采用 给出/提供 对比/比较
        发布/公布 支持/兼容 文章/本文 如何/怎样 降低/减少 实现/做到 主要/核心 阅读/一读 约/大约
        以及/和 还/也 作者称/作者表示 文中说明/文章指出 显著优于/明显好于 适合关注/推荐关注
        结合起来/融合在一起 进行程序化控制/做程序化管控 的区别/的差异 等主题/等话题 修复了/解决了
        """
    )
)
INSERTS = _words("还 也 同时")

_SPACING_RE = re.compile(r"(?<=[\u4e00-\u9fff])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?=[\u4e00-\u9fff])")
_SLOT_RE = re.compile(r"\{(\w+)\}")
_CLAUSE_RE = re.compile(r"[^，。；：]+")
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "t": 10**12, "tb": 10**12,
    "ki": 2**10, "kib": 2**10, "mi": 2**20, "mib": 2**20, "gi": 2**30, "gib": 2**30,
}  # fmt: skip


def parse_size(text: str) -> int:
    """``'25MB'`` -> 25_000_000; ``'1GiB'`` -> 2**30; plain digits are bytes."""
    m = _SIZE_RE.match(text)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"bad size {text!r} (use e.g. 1MB, 25MB, 1GB)")
    size = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if size <= 0:
        raise ValueError(f"size must be positive: {text!r}")
    return size


def md_escape(text: str) -> str:
    """Escape ``_ + [ ] ( ) #`` as the site's markdown does."""
    return text.translate(_MD_ESCAPE)


@dataclass(slots=True)
class Resource:
    title_zh: str
    title_en: str
    summary: str
    kind: int
    publisher: str
    age: str
    collected: str
    chinese: bool = False  # written in Chinese: its original title is its Chinese title

    @property
    def original(self) -> str:
        return self.title_zh if self.chinese else self.title_en


#: What makes a Chinese original's title long or a question, as a summary may be.
CHINESE_TAILS = _words(
    "：我们在生产环境里踩过的坑与完整复盘|：从原理到工程实践的一份完整记录|，真的值得投入吗？"
    "|：一次线上事故之后我们重新设计了整个流程|——写给正在做技术选型的团队|，到底难在哪里？"
)


@dataclass(slots=True)
class Topic:
    name: str
    description: str
    category: str
    slug: str


class _Slots:
    """Per-resource slot values; nouns and numbers are drawn fresh on each use."""

    def __init__(self, rng: Random, kind: int, publisher: str) -> None:
        self.rng = rng
        self.kind = kind
        self.publisher = publisher
        self.p = product_name(rng)
        self.q = product_name(rng)
        self.r = rng.choice(REAL_TECH)
        self.h = rng.choice(HARDWARE)
        self.per = person(rng)
        self.per2 = person(rng)
        self.year = str(rng.randint(2024, 2026))
        self.season = rng.choice(SEASONS)
        self.code = f"{rng.choice(('CS', 'EE', 'DS', '11-'))}{rng.randint(100, 899)}"
        self.unit = -1
        self.date = f"{self.year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"

    def fill(
        self,
        template: str,
        *,
        english: bool = False,
        fixed: dict[str, tuple[str, str]] | None = None,
    ) -> str:
        """Fill ``{SLOT}``s; ``fixed`` pins (Chinese, English) values, e.g. for a title pair."""
        rng = self.rng
        out: list[str] = []
        pos = 0
        nouns_used: list[int] = []
        self.unit = -1
        for m in _SLOT_RE.finditer(template):
            out.append(template[pos : m.start()])
            pos = m.end()
            key = m.group(1)
            if fixed is not None and key in fixed:
                out.append(fixed[key][1 if english else 0])
            else:
                out.append(self._value(key, english, nouns_used, rng))
        out.append(template[pos:])
        text = "".join(out)
        if english:
            return text[:1].upper() + text[1:]
        # a space between Han and ASCII letters/digits, as the site's summaries have
        return _SPACING_RE.sub(" ", text)

    def title_values(self) -> dict[str, tuple[str, str]]:
        """Values shared by a Chinese title and its English original."""
        rng = self.rng
        n, m = rng.sample(NOUNS, 2)
        o = rng.randrange(3)
        k = str(rng.randint(2, 99))
        v = f"{rng.randint(1, 3)}.{rng.randint(0, 19)}"
        c = self._value("C", False, [], rng)
        return {
            "N": n, "M": m, "K": (k, k), "V": (v, v), "C": (c, c),
            "O": (ORDINALS_ZH[o], ORDINALS_ROMAN[o]), "OR": (ORDINALS_ZH[o], ORDINALS_ROMAN[o]),
        }  # fmt: skip

    def _noun(self, english: bool, used: list[int], rng: Random) -> str:
        i = rng.randrange(len(NOUNS))
        while i in used:
            i = rng.randrange(len(NOUNS))
        used.append(i)
        return NOUNS[i][1 if english else 0]

    def _value(self, key: str, english: bool, used: list[int], rng: Random) -> str:
        if key in ("N", "M", "L"):
            return self._noun(english, used, rng)
        if key == "P":
            return self.p
        if key == "Q":
            return self.q
        if key == "R":
            return self.r
        if key == "H":
            return self.h
        if key == "PER":
            return self.per
        if key == "PER2":
            return self.per2
        if key == "PUB":
            return self.publisher
        if key == "K":
            return str(rng.randint(2, 99))
        if key == "K3":
            return str(rng.randint(120, 9999))
        if key == "V":
            return f"{rng.randint(1, 3)}.{rng.randint(0, 19)}"
        if key == "O":
            return ORDINALS_ZH[rng.randrange(3)]
        if key == "OR":
            return ORDINALS_ROMAN[rng.randrange(3)]
        if key == "C":
            if rng.random() < 0.5:
                return rng.choice(CODE_IDS)
            return f"{rng.choice(CODE_WORDS)}_{rng.choice(CODE_WORDS)}"
        if key in ("X1", "X2"):
            if self.unit < 0:
                self.unit = rng.randrange(len(_METRICS))
            return metric(rng, self.unit)
        if key == "X3":
            return f"{rng.randint(1, 9)}.{rng.randint(1, 9)}"
        if key == "PCT":
            return f"{rng.randint(2, 95)}.{rng.randint(0, 9)}%"
        if key == "PKG":
            return self.p.lower().replace(" ", "-")
        if key == "CODE":
            return self.code
        if key == "Y":
            return self.year
        if key == "S":
            return self.season[0]
        if key == "SE":
            return self.season[1]
        if key == "U":
            return self.publisher
        if key == "UE":
            return UNIV_EN.get(self.publisher, self.publisher)
        if key == "DATE":
            return self.date
        if key == "DATEZH":
            y, mo, d = self.date.split("-")
            return f"{y} 年 {int(mo)} 月 {int(d)} 日"
        if key == "HANDLE":
            return rng.choice(LAST_NAMES).lower() + str(rng.randint(1, 99))
        if key == "ENW":
            return rng.choice(EN_WORDS)
        raise KeyError(key)


def product_name(rng: Random) -> str:
    name = rng.choice(NAME_PRE) + rng.choice(NAME_SUF)
    roll = rng.random()
    if roll < 0.3:
        name += f"-{rng.randint(2, 9)}"
    elif roll < 0.55:
        name += f" {rng.randint(1, 9)}.{rng.randint(0, 9)}"
    elif roll < 0.65:
        name += rng.choice(("-Flash", "-Lite", "-XL", "-Pro", "-Next"))
    return name


def person(rng: Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


_METRICS = ("ms", "tok/s", "GB", "倍", "K 上下文")


def metric(rng: Random, unit: int) -> str:
    """A measurement in unit ``_METRICS[unit]``."""
    if unit == 0:
        return f"{rng.randint(1, 99)}.{rng.randint(10, 99)} ms"
    if unit == 1:
        return f"{rng.randint(10, 999)}.{rng.randint(10, 99)} tok/s"
    if unit == 2:
        return f"{rng.randint(1, 256)}GB"
    if unit == 3:
        return f"{rng.randint(1, 9)}.{rng.randint(0, 9)} 倍"
    return f"{rng.randint(1, 256)}K 上下文"


def make_summary(rng: Random, slots: _Slots) -> str:
    """A Chinese summary of SUMMARY_MIN..SUMMARY_MAX characters, seed-style prose."""
    target = rng.randint(160, 360)
    opening = rng.choice(OPENINGS[slots.kind]) if rng.random() < 0.7 else ""
    parts = [slots.fill(opening)]
    length = len(parts[0])
    cores = rng.sample(range(len(CORES)), len(CORES))  # never the same core twice
    ci = 0
    in_sentence = bool(parts[0]) and not parts[0].endswith("。")
    while length < target and ci < len(cores):
        clause = slots.fill(rng.choice(CONNECTORS) + CORES[cores[ci]])
        ci += 1
        # one to three clauses per sentence
        if in_sentence and rng.random() < 0.55:
            end = "，" if rng.random() < 0.8 else "；"
            clause = clause + end
        else:
            clause = clause + "。"
        in_sentence = clause.endswith(("，", "；"))
        if length + len(clause) > SUMMARY_MAX - 40:
            break
        parts.append(clause)
        length += len(clause)
    text = "".join(parts)
    if text.endswith(("，", "；")):
        text = text[:-1] + "。"
    if rng.random() < 0.6:
        ending = slots.fill(rng.choice(ENDINGS))
        if len(text) + len(ending) <= SUMMARY_MAX:
            text += ending
    while len(text) < SUMMARY_MIN:  # rare: short clauses; pad with another sentence
        extra = slots.fill(rng.choice(CONNECTORS) + CORES[cores[ci % len(CORES)]]) + "。"
        ci += 1
        text += extra
    if len(text) > SUMMARY_MAX:
        text = text[: SUMMARY_MAX - 1].rstrip("，；、 ") + "。"
    return text


def make_variant(summary: str, rng: Random) -> str:
    """Reword ONE clause of ``summary`` (a few characters), keeping it a near-duplicate."""
    spans = [(m.start(), m.end()) for m in _CLAUSE_RE.finditer(summary)]
    for idx in rng.sample(range(len(spans)), len(spans)):
        a, b = spans[idx]
        clause = summary[a:b]
        hits = [(old, new) for old, new in REWORDINGS if old in clause]
        if not hits:
            continue
        # one contiguous edit: SequenceMatcher (with its autojunk heuristic) then still
        # aligns everything else, so the ratio stays >= 0.95 on 160+ characters
        old, new = hits[rng.randrange(len(hits))]
        return summary[:a] + clause.replace(old, new, 1) + summary[b:]
    a, _ = spans[rng.randrange(len(spans))]
    return summary[:a] + rng.choice(INSERTS) + summary[a:]


class Generator:
    def __init__(self, out: Path, size: int, seed: int) -> None:
        self.out = out
        self.size = size
        self.seed = seed
        # Independent streams so that e.g. encoding choices do not shift content.
        self.r_pool = Random(seed * 1_000_003 + 1)
        self.r_topic = Random(seed * 1_000_003 + 2)
        self.r_vary = Random(seed * 1_000_003 + 3)
        self.r_fmt = Random(seed * 1_000_003 + 4)
        self.r_item = Random(seed * 1_000_003 + 5)
        self.r_zh = Random(seed * 1_000_003 + 7)  # Chinese originals and how pages show them
        self.r_html = Random(seed * 1_000_003 + 8)  # which pages are saved HTML, in what shape
        self.r_part = Random(seed * 1_000_003 + 9)  # which topics are saved in parts, where cut

        self.planned_topics = max(3, round(size / EST_UNIT_BYTES))
        mean_listings = (MIN_LISTINGS + MAX_LISTINGS) / 2
        self.n_topic_pool = max(
            MAX_LISTINGS + 20,
            round(self.planned_topics * mean_listings / MEAN_TOPIC_PAGES_PER_RESOURCE),
        )
        self.item_pages_per_topic = ITEM_PAGE_SHARE * self.n_topic_pool / self.planned_topics
        self.n_related_pool = max(8, round(self.planned_topics * self.item_pages_per_topic * 0.6))

        self.resources: list[Resource] = []
        self.appearances = bytearray()  # per resource, capped at 255
        self.canonical_seen = bytearray()
        self.has_item_page = bytearray()
        self.appeared_topic_res: list[int] = []
        self.topic_page_count = bytearray()  # how many topic pages list each resource (<=255)

        self.counts = {
            "topic_page": 0,
            "topic_list": 0,
            "item_page": 0,
        }  # fmt: skip  (files)
        self.topics = 0  # topic pages (one a topic, in one file or in parts)
        self.topic_lists = 0  # topic lists (in one file or in parts)
        self.parted = {"topics": 0, "topic_page_files": 0, "topic_lists": 0, "topic_list_files": 0}
        self.listing_counts = {
            "topic_page_listings": 0,
            "topic_list_entries": 0,
            "item_page_main": 0,
            "related_entries": 0,
        }
        self.encodings = dict.fromkeys(ENCODINGS, 0)
        self.variants = 0
        self.crlf_files = 0
        self.multiline_topic_pages = 0
        self.bytes = 0
        self.same_title_pairs = 0
        self._enc_schedule: list[str] = []
        self.chinese_lines = {"repeated": 0, "missing": 0}  # item-page entries shown so
        self.chinese_shown = bytearray()  # per resource: its original title shown on a page
        self.html_pages = {"topic_page": 0, "topic_list": 0, "item_page": 0}

    # ---- pool -------------------------------------------------------------------------

    def build_pool(self) -> None:
        rng = self.r_pool
        used_zh: set[str] = set()
        used_en: set[str] = set()
        total = self.n_topic_pool + self.n_related_pool
        for _ in range(total):
            self.resources.append(self._new_resource(rng, used_zh, used_en))
        n = len(self.resources)
        self.appearances = bytearray(n)
        self.canonical_seen = bytearray(n)
        self.has_item_page = bytearray(n)
        self.topic_page_count = bytearray(n)
        # A few distinct resources share the same Chinese title (different summary and
        # different English title): pairs within the topic-page pool.
        pairs = max(2, self.n_topic_pool // 400)
        picks = rng.sample(range(self.n_topic_pool), 2 * pairs)
        for i in range(pairs):
            src, dst = self.resources[picks[2 * i]], self.resources[picks[2 * i + 1]]
            dst.title_zh = src.title_zh
        self.same_title_pairs = pairs
        self.chinese_shown = bytearray(n)
        paired = set(picks)
        for rid, res in enumerate(self.resources):
            if rid in paired or not _has_han(res.title_zh) or self.r_zh.random() >= CHINESE_SHARE:
                continue
            res.chinese = True
            if self.r_zh.random() < 0.5:
                longer = res.title_zh + self.r_zh.choice(CHINESE_TAILS)
                if longer not in used_zh:
                    used_zh.add(longer)
                    res.title_zh = longer

    def _new_resource(self, rng: Random, used_zh: set[str], used_en: set[str]) -> Resource:
        kind = rng.choices(range(len(KINDS)), KIND_WEIGHTS)[0]
        publisher = rng.choice(PUBLISHERS[kind])
        slots = _Slots(rng, kind, publisher)
        while True:
            if kind == PROJECT and rng.random() < 0.5:
                owner = rng.choice(LAST_NAMES).lower() + rng.choice(("", "ai", "labs", "-dev"))
                zh = en = f"{owner}/{slots.p.replace(' ', '-')}"
            else:
                tzh, ten = rng.choice(TITLES[kind])
                values = slots.title_values()
                zh = slots.fill(tzh, fixed=values)
                en = slots.fill(ten, english=True, fixed=values)
            if zh not in used_zh and en not in used_en:
                break
            slots.p = product_name(rng)
        used_zh.add(zh)
        used_en.add(en)
        summary = make_summary(rng, slots)
        months = rng.random() < 0.5
        age = f"{rng.randint(1, 11)} 个月前" if months else f"{rng.randint(1, 29)} 天前"
        collected = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        return Resource(zh, en, summary, kind, publisher, age, collected)

    def _new_topics(self) -> _TopicMaker:
        return _TopicMaker(Random(self.seed * 1_000_003 + 6))

    # ---- appearances --------------------------------------------------------------------

    def appear(self, rid: int, *, allow_variant: bool = True) -> str:
        """The summary text of one appearance of resource ``rid``; records the count."""
        res = self.resources[rid]
        if self.appearances[rid] < 255:
            self.appearances[rid] += 1
        if allow_variant and self.canonical_seen[rid] and self.r_vary.random() < VARIANT_SHARE:
            self.variants += 1
            return make_variant(res.summary, self.r_vary)
        self.canonical_seen[rid] = 1
        return res.summary

    # ---- output -------------------------------------------------------------------------

    def _encoding(self) -> str:
        if not self._enc_schedule:
            block = ["utf-8"] * 17 + ["utf-8-sig", "utf-16", "gb18030"]
            self.r_fmt.shuffle(block)
            self._enc_schedule = block[::-1]
        return self._enc_schedule.pop()

    def write(
        self,
        name: str,
        lines: Sequence[str],
        *,
        flat: bool = False,
        saved: Callable[[Random], str] | None = None,
    ) -> None:
        """Write a page as its text dump or, the first of its kind and now and then, as the
        saved HTML ``saved`` makes (its dump then goes to ``twins/``)."""
        rng = self.r_fmt
        kind = {"tp": "topic_page", "tl": "topic_list", "ip": "item_page"}[name[:2]]
        if saved is not None and (self.counts[kind] == 1 or self.r_html.random() < HTML_SHARE):
            self.html_pages[kind] += 1
            twin = (" " if flat else "\n").join(lines)
            (self.out.parent / TWINS / name).write_text(twin + "\n", encoding="utf-8")
            name, text = name.removesuffix(".txt") + ".html", saved(self.r_html)
        elif flat:
            text = " ".join(lines)
        else:
            crlf = rng.random() < (0.4 if name.startswith("tp_") else 0.1)
            sep = "\r\n" if crlf else "\n"
            self.crlf_files += crlf
            text = sep.join(lines)
            if rng.random() < 0.5:
                text += sep
        enc = self._encoding()
        data = encode(text, enc)
        if enc == "gb18030" and data.decode("gb18030") != text:  # pragma: no cover
            enc, data = "utf-8", text.encode("utf-8")
        self.encodings[enc] += 1
        (self.out / name).write_bytes(data)
        self.bytes += len(data)

    # ---- pages ------------------------------------------------------------------------

    def parts(self, n: int) -> list[tuple[int, int]]:
        """Where the pages of a topic of ``n`` listings start and stop: one page, or the
        2-4 pages of one page size a paginated topic shows (the last one the rest)."""
        if self.topics == 0 or self.r_part.random() >= PARTED_SHARE:
            return [(0, n)]
        sizes = [z for z in PAGE_SIZES if 2 <= -(-n // z) <= 4]
        size = sizes[self.r_part.randrange(len(sizes))]
        return [(a, min(a + size, n)) for a in range(0, n, size)]

    def topic_page(
        self, topic: Topic, rids: list[int], levels: list[int], parts: list[tuple[int, int]]
    ) -> None:
        """Write one topic page listing ``rids`` in order at ``levels``: one file, or one a
        part of ``parts`` (each with the header and the footer, the ranks continuing)."""
        rng = self.r_fmt
        multiline = rng.random() < MULTILINE_SHARE
        header = [
            f"# {topic.name}",
            topic.description,
            f"- 所属：[{topic.category}]()",
            f"- 网站：[{TOPIC_URL}{topic.slug}]()",
            SECTION,
        ]
        listings = []
        shown: list[tuple[str, str, str]] = []  # title, meta, summary: for a saved page
        for num, (rid, lev) in enumerate(zip(rids, levels, strict=True), start=1):
            res = self.resources[rid]
            summary = self.appear(rid)
            listings.append(
                f"{num}. [{md_escape(res.title_zh)}]()（{KINDS[res.kind]} · {LEVELS[lev]}）"
                f"：{md_escape(summary)}"
            )
            shown.append((res.title_zh, f"{KINDS[res.kind]} · {LEVELS[lev]}", summary))
            if self.topic_page_count[rid] == 0:
                self.appeared_topic_res.append(rid)
            if self.topic_page_count[rid] < 255:
                self.topic_page_count[rid] += 1
        footer = ["---", FOOTER_NOTICE, FOOTER_SOURCE]
        self.listing_counts["topic_page_listings"] += len(rids)
        head = (topic.name, topic.description, topic.category, TOPIC_URL + topic.slug, SECTION[3:])
        number = self.topics
        self.topics += 1
        if len(parts) > 1:
            self.parted["topics"] += 1
            self.parted["topic_page_files"] += len(parts)
        blank = multiline and rng.random() < 0.5  # markdown-style blank lines between blocks
        for k, (a, b) in enumerate(parts, start=1):
            part = f"_p{k}" if len(parts) > 1 else ""
            name = f"tp_{number:06d}{part}.txt"
            self.counts["topic_page"] += 1

            def saved(rng: Random, a: int = a, b: int = b) -> str:
                page = corpus_html.topic_page(rng, head, shown[a:b], (FOOTER_NOTICE, FOOTER_SOURCE))
                if a == 0:
                    return page
                assert page.count("<ol>") == 1  # the listings: numbered from the page's first
                return page.replace("<ol>", f'<ol start="{a + 1}">')

            if multiline:
                self.multiline_topic_pages += 1
                if blank:
                    lines = [header[0], "", header[1], "", *header[2:4], "", SECTION, ""]
                    lines += [*listings[a:b], "", "---", "", FOOTER_NOTICE, "", FOOTER_SOURCE]
                else:
                    lines = [*header, *listings[a:b], *footer]
                self.write(name, lines, saved=saved)
            else:
                flat = [f"{header[0]} {header[1]}", *header[2:], *listings[a:b], *footer]
                self.write(name, flat, flat=True, saved=saved)

    def topic_list(self, topic: Topic, rids: list[int], levels: list[int], parts: int) -> None:
        """Write the topic list of a topic: one file, or ``parts`` files (as many as its
        topic page has, at most one an entry) each with the description and stats lines."""
        rng = self.r_topic
        roll = rng.random()
        kinds_present = sorted({self.resources[r].kind for r in rids})
        if roll < 0.65:
            wanted = {BLOG}
        elif roll < 0.85:
            wanted = set(kinds_present)
        else:
            wanted = {kinds_present[rng.randrange(len(kinds_present))]}
        shown = [r for r in rids if self.resources[r].kind in wanted]
        if not shown:
            shown = list(rids)
        beginners = sum(1 for lev in levels if lev == 0)
        stats = f"{len(rids)} 条精选 · 入门 {beginners} · {ORDER_NOTE}"
        entries: list[corpus_html.Entry] = []
        for rid in shown:
            res = self.resources[rid]
            self.chinese_shown[rid] |= res.chinese
            entries.append(([res.original], self.appear(rid)))
        self.listing_counts["topic_list_entries"] += len(shown)
        number = self.topic_lists
        self.topic_lists += 1
        k = min(parts, len(entries))
        cuts = [len(entries) * j // k for j in range(k + 1)]  # as even as the entries allow
        if k > 1:
            self.parted["topic_lists"] += 1
            self.parted["topic_list_files"] += k
        for j in range(k):
            some = entries[cuts[j] : cuts[j + 1]]
            lines = [topic.description, stats]
            for titles, summary in some:
                lines += [*titles, summary]
            part = f"_p{j + 1}" if k > 1 else ""
            self.counts["topic_list"] += 1
            self.write(
                f"tl_{number:06d}{part}.txt",
                lines,
                saved=lambda r, some=some: corpus_html.topic_list(
                    r, topic.description, stats, some
                ),
            )

    def item_page(self, rids: list[int]) -> None:
        """An item page for a resource of the topic page just written (order ``rids``)."""
        rng = self.r_item
        pos = -1
        for _ in range(8):
            p = rng.randrange(len(rids))
            if not self.has_item_page[rids[p]]:
                pos = p
                break
        if pos < 0:
            return
        main = rids[pos]
        self.has_item_page[main] = 1
        res = self.resources[main]
        n_related = rng.randint(3, 6)
        related: list[int] = []
        seen = {main}

        def add(rid: int) -> None:
            if rid not in seen and len(related) < n_related:
                seen.add(rid)
                related.append(rid)

        # neighbours on the topic page (the seed's #38 relates to #37, #39, #40)
        for off in rng.sample((-1, 1, 2, -2), rng.randint(1, 3)):
            if 0 <= pos + off < len(rids):
                add(rids[pos + off])
        # resources that appear nowhere else
        for _ in range(rng.choices((0, 1, 2), (35, 45, 20))[0]):
            add(self.n_topic_pool + rng.randrange(self.n_related_pool))
        # anything already listed on some topic page
        for _ in range(100):
            if len(related) >= n_related:
                break
            add(self.appeared_topic_res[rng.randrange(len(self.appeared_topic_res))])
        rng.shuffle(related)
        own = (self.titles_shown(main), self.appear(main, allow_variant=False))
        facts = ["分级", RATINGS[main % len(RATINGS)], "收录时间", res.collected]
        lines = [f"{res.publisher}··{res.age}", *own[0], own[1], *(f"- {f}" for f in facts)]
        lines.append("推荐阅读")
        entries = [(self.titles_shown(rid), self.appear(rid)) for rid in related]
        for titles, summary in entries:
            lines += [*titles, summary]
        self.listing_counts["item_page_main"] += 1
        self.listing_counts["related_entries"] += len(related)
        name = f"ip_{self.counts['item_page']:06d}.txt"
        self.counts["item_page"] += 1
        byline = (res.publisher, res.age)
        self.write(
            name, lines, saved=lambda r: corpus_html.item_page(r, byline, own, facts, entries)
        )

    def titles_shown(self, rid: int) -> list[str]:
        """An item-page entry's title lines: its Chinese title and its original title; a
        Chinese original's title repeated, or left out, half the time each."""
        res = self.resources[rid]
        if not res.chinese:
            return [res.title_zh, res.title_en]
        self.chinese_shown[rid] = 1
        how = "repeated" if self.r_zh.random() < 0.5 else "missing"
        self.chinese_lines[how] += 1
        return [res.title_zh] * (2 if how == "repeated" else 1)

    # ---- driver -----------------------------------------------------------------------

    def run(self) -> dict[str, object]:
        self.build_pool()
        topics = self._new_topics()
        rng = self.r_topic
        item_credit = 0.0
        unit_bytes = float(EST_UNIT_BYTES)
        t = 0
        while t == 0 or self.bytes + unit_bytes / 2 < self.size:
            topic = topics.make()
            n = min(rng.randint(MIN_LISTINGS, MAX_LISTINGS), self.n_topic_pool)
            rids = rng.sample(range(self.n_topic_pool), n)
            levels = topic_levels(rng, n)
            parts = self.parts(n)
            self.topic_page(topic, rids, levels, parts)
            if rng.random() < TOPIC_LIST_SHARE:
                self.topic_list(topic, rids, levels, len(parts))
            item_credit += self.item_pages_per_topic
            while item_credit >= 1.0:
                item_credit -= 1.0
                self.item_page(rids)
            t += 1
            unit_bytes = self.bytes / t
        appeared = sum(1 for c in self.appearances if c)
        on_topic_pages = sum(1 for c in self.topic_page_count if c)
        listings = sum(self.listing_counts.values())
        return {
            "generator_version": GENERATOR_VERSION,
            "seed": self.seed,
            "size_target": self.size,
            "bytes": self.bytes,
            "files": dict(self.counts),
            "listings": listings,
            "listings_by_kind": dict(self.listing_counts),
            "items": appeared,
            "topics": self.topics,
            "topic_lists": self.topic_lists,
            "parted": dict(self.parted),
            "items_on_topic_pages": on_topic_pages,
            "mean_topic_pages_per_item": round(
                self.listing_counts["topic_page_listings"] / max(1, on_topic_pages), 3
            ),
            "near_duplicate_variants": self.variants,
            "same_title_zh_pairs": self.same_title_pairs,
            "encodings": dict(self.encodings),
            "crlf_files": self.crlf_files,
            "multiline_topic_pages": self.multiline_topic_pages,
            "rejects": 0,  # every page is valid: nothing to reject
            "chinese_originals": sum(
                1 for r, c in zip(self.resources, self.appearances, strict=True) if r.chinese and c
            ),
            "chinese_originals_shown": sum(self.chinese_shown),
            "chinese_original_lines": dict(self.chinese_lines),
            "html_pages": dict(self.html_pages),
        }


class _TopicMaker:
    def __init__(self, rng: Random) -> None:
        self.rng = rng
        self.names: set[str] = set()
        self.descs: set[str] = set()
        self.slugs: set[str] = set()

    def make(self) -> Topic:
        rng = self.rng
        name = self._unique(self.names, self._name)
        desc = self._unique(self.descs, self._desc)
        slug = self._unique(self.slugs, self._slug)
        return Topic(name, desc, rng.choice(CATEGORIES), slug)

    def _unique(self, used: set[str], make: Callable[[int], str]) -> str:
        for attempt in range(1000):
            value = make(attempt)
            if value not in used:
                used.add(value)
                return value
        raise RuntimeError("vocabulary exhausted")  # pragma: no cover

    def _name(self, attempt: int) -> str:
        a, b = self.rng.sample(TOPIC_NOUNS, 2)
        name = self.rng.choice(TOPIC_NAME_PATTERNS).format(a=a, b=b)
        return name if attempt < 20 else f"{name}{ORDINALS_ZH[attempt % 5]}"

    def _desc(self, attempt: int) -> str:
        a, b, c = self.rng.sample(TOPIC_NOUNS, 3)
        return self.rng.choice(DESC_PATTERNS).format(
            a=a, b=b, c=c, d=self.rng.choice(AUDIENCE_DESC), e=self.rng.choice(AUDIENCE_ROLE)
        )

    def _slug(self, attempt: int) -> str:
        k = 2 + (attempt > 10) + self.rng.randrange(2)
        return "-".join(self.rng.sample(SLUG_WORDS, k))


def topic_levels(rng: Random, n: int) -> list[int]:
    """Non-decreasing levels: a few 入门, then 进阶, then 深入."""
    beginners = min(n, rng.choices((0, 1, 2, 3, 4, 6), (10, 20, 30, 20, 12, 8))[0])
    intermediate = round((n - beginners) * rng.uniform(0.3, 0.65))
    return [0] * beginners + [1] * intermediate + [2] * (n - beginners - intermediate)


def encode(text: str, encoding: str) -> bytes:
    if encoding == "utf-8":
        return text.encode("utf-8")
    if encoding == "utf-8-sig":
        return b"\xef\xbb\xbf" + text.encode("utf-8")
    if encoding == "utf-16":  # BOM + little-endian, the same bytes on every platform
        return b"\xff\xfe" + text.encode("utf-16-le")
    if encoding == "gb18030":
        return text.encode("gb18030")
    raise ValueError(encoding)


def prepare_out(out: Path) -> None:
    """Delete and recreate ``out``; refuse unless it is empty or a previous corpus."""
    if out.exists() or out.is_symlink():
        if not out.is_dir() or out.is_symlink():
            raise SystemExit(f"gen_corpus: {out} exists and is not a directory; refusing")
        if any(out.iterdir()):
            if not (out / MARKER).is_file():
                raise SystemExit(
                    f"gen_corpus: {out} is not empty and has no {MARKER} marker; "
                    "refusing to delete it"
                )
            shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def generate(out: Path, size: int, seed: int = 0) -> dict[str, object]:
    prepare_out(out)
    (out / MARKER).write_text(
        json.dumps({"generator": "bench/gen_corpus.py", "seed": seed, "size_target": size}) + "\n",
        encoding="utf-8",
    )
    (out / DUMPS).mkdir()
    (out / TWINS).mkdir()
    expected = Generator(out / DUMPS, size, seed).run()
    tmp = out / (EXPECTED + ".tmp")
    tmp.write_text(json.dumps(expected, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    tmp.replace(out / EXPECTED)
    return expected


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="output folder (recreated)")
    ap.add_argument("--size", default="25MB", help="target total size, e.g. 1MB, 100MB, 1GB")
    ap.add_argument("--seed", default=0, type=int, help="random seed (default 0)")
    args = ap.parse_args(argv)
    try:
        size = parse_size(args.size)
    except ValueError as exc:
        ap.error(str(exc))
    expected = generate(args.out, size, args.seed)
    files = expected["files"]
    assert isinstance(files, dict)
    print(
        f"gen_corpus: {sum(files.values())} files, {expected['bytes']:,} bytes, "
        f"{expected['items']} items, {expected['topics']} topics -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
