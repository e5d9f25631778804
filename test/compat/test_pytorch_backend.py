"""The `pytorch` backend (python/backends/pytorch, docs/backends.md#pytorch) through the real tritonclient
over HTTP and gRPC, on models PyTorch itself makes in the test setup (framework_models.py): a scripted
TorchScript module with a dict output and forward-argument input names, a traced one with a tuple output
and Triton's INPUT__0/OUTPUT__<i> names (listed out of order), a scripted one taking a Dict[str, Tensor],
an exported program (`platform: "torch_aoti"`, model.pt2) named by Triton's PT2 rules, and an AOTInductor
package (`torch._inductor.aoti_compile_and_package`, also `torch_aoti` model.pt2) with two inputs, a tuple
output and a dynamic batch dim. Every model batches (max_batch_size 8, dynamic batching); the requests of one
test are sent at once with different batch sizes and every answer is compared element-wise with PyTorch's own
on the same inputs (the AOTInductor package's with torch's own loader of that package).

The AOTInductor package is compiled with the backend's torch (C++ codegen and build of a 2-op module) and
cached in .cache/aoti-packages/<torch version>-<hash of the module's source>/model.pt2: the first run of this
file costs about 130 s more on a loaded 2-core machine, later runs reuse the package and skip the compile.

Needs the backend's venv (`npx nereid backends install pytorch`, which scripts/test.sh runs); without it
the tests skip and say so.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator

import pytest

from framework_backends import (
    PROTOCOLS,
    Served,
    assert_matches_framework,
    counts,
    infer_all,
    make_models,
    request_count,
    require_venv,
    serve,
)
from nereid_stub.frameworks import usable_cores

MODELS = ["ts_scripted_dict", "ts_traced_tuple", "ts_dict_input", "exported_program", "aoti_package"]


@pytest.fixture(scope="module")
def torch_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    python = require_venv("pytorch")
    out = make_models("pytorch", python, tmp_path_factory.mktemp("pytorch"))
    # A config the model cannot satisfy: three inputs for a forward that takes two.
    wrong = out / "models" / "ts_wrong_count"
    (wrong / "1").mkdir(parents=True)
    shutil.copy(out / "models" / "ts_scripted_dict" / "1" / "model.pt", wrong / "1" / "model.pt")
    (wrong / "config.pbtxt").write_text(
        'platform: "pytorch_libtorch"\nmax_batch_size: 8\n'
        + "".join(f'input {{ name: "{n}" data_type: TYPE_FP32 dims: [ 4 ] }}\n' for n in ("x", "y", "z"))
        + 'output { name: "sum" data_type: TYPE_FP32 dims: [ 4 ] }\n',
        encoding="utf-8",
    )
    yield from serve(out, out / "server.log")


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_answers_equal_pytorch(torch_served: Served, protocol: str, model: str) -> None:
    answers = infer_all(torch_served, protocol, model)
    assert_matches_framework(torch_served, model, answers)


@pytest.mark.parametrize("model", ["ts_scripted_dict", "aoti_package"])
def test_dynamic_batcher_joins_requests(torch_served: Served, model: str) -> None:
    # Six requests sent at once with a 20 ms queue delay: the batcher hands some of them to one execute,
    # which runs them as one batch over dim 0 and splits the rows back (the answers above prove the split).
    # For the AOTInductor package this is its dynamic batch dim taking the joined sizes.
    before = counts(torch_served, model)
    answers = infer_all(torch_served, "grpc", model)
    assert_matches_framework(torch_served, model, answers)
    after = counts(torch_served, model)
    requests = request_count(torch_served.expected(model))
    rows = sum(int(next(iter(a.values())).shape[0]) for a in answers)
    assert after[0] - before[0] == rows
    assert after[1] - before[1] < requests, f"no two of {requests} requests were executed together"


def test_platform_and_names_in_config(torch_served: Served) -> None:
    config = torch_served.http.get_model_config("ts_traced_tuple")
    assert [o["name"] for o in config["output"]] == ["OUTPUT__2", "OUTPUT__0", "OUTPUT__1"]
    exported = torch_served.http.get_model_config("exported_program")
    assert exported["platform"] == "torch_aoti"
    assert [i["name"] for i in exported["input"]] == ["ARGS[0]", "y"]
    package = torch_served.http.get_model_config("aoti_package")
    assert package["platform"] == "torch_aoti"
    assert package["backend"] == "pytorch"
    assert [i["name"] for i in package["input"]] == ["ARGS[0]", "INPUT__1"]
    assert [o["name"] for o in package["output"]] == ["RESULT[0]", "OUTPUT__1"]
    assert package["max_batch_size"] == 8


def _thread_lines(served: Served, model: str) -> list[tuple[int, int]]:
    pattern = re.compile(rf"pytorch model '{re.escape(model)}': .* threads intra-op (\d+) inter-op (\d+)")
    return [(int(a), int(b)) for a, b in pattern.findall(served.server.log_text())]


def test_threads_default_to_a_fair_share_of_the_cores(torch_served: Served) -> None:
    # ts_scripted_dict has two instances and no thread parameters: each gets cores // 2 (at least 1), so
    # the two together never run more threads than the machine has cores.
    share = max(1, usable_cores() // 2)
    assert _thread_lines(torch_served, "ts_scripted_dict") == [(share, share), (share, share)]


def test_thread_parameters_override_the_share(torch_served: Served) -> None:
    # ts_traced_tuple: one instance, INTRA_OP_THREAD_COUNT 3; its inter-op pool keeps the default share.
    assert _thread_lines(torch_served, "ts_traced_tuple") == [(3, usable_cores())]


def test_input_count_mismatch_fails_the_load_with_triton_text(torch_served: Served) -> None:
    index = {m["name"]: m for m in torch_served.http.get_model_repository_index()}
    entry = index["ts_wrong_count"]
    assert entry.get("state") == "UNAVAILABLE", entry
    assert "configuration expects 3 inputs, model provides 2" in entry.get("reason", ""), entry
    # The others still serve.
    assert torch_served.http.is_model_ready("ts_scripted_dict")
