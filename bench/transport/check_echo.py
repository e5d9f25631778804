"""Proves the bare echo servers answer correctly before bench/transport measures them: the real
tritonclient sends both payloads (16 and 153600 FP32 values) over HTTP (binary tensors) and gRPC (raw
contents) and must get the same values back under OUTPUT0, with the request id echoed.

Usage: .venv/bin/python bench/transport/check_echo.py --http HOST:PORT --grpc HOST:PORT
"""

from __future__ import annotations

import argparse

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

MODEL = "identity_fp32"


def check_http(url: str, length: int) -> None:
    client = httpclient.InferenceServerClient(url=url)
    try:
        assert client.get_model_metadata(MODEL)["inputs"][0]["name"] == "INPUT0"
        data = np.random.default_rng(length).standard_normal((1, length)).astype(np.float32)
        tensor = httpclient.InferInput("INPUT0", [1, length], "FP32")
        tensor.set_data_from_numpy(data, binary_data=True)
        result = client.infer(
            MODEL, [tensor], outputs=[httpclient.InferRequestedOutput("OUTPUT0")], request_id="c1"
        )
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)
        assert result.get_response()["id"] == "c1"
    finally:
        client.close()


def check_grpc(url: str, length: int) -> None:
    client = grpcclient.InferenceServerClient(url=url)
    try:
        assert client.get_model_config(MODEL).config.max_batch_size == 8
        data = np.random.default_rng(length).standard_normal((1, length)).astype(np.float32)
        tensor = grpcclient.InferInput("INPUT0", [1, length], "FP32")
        tensor.set_data_from_numpy(data)
        result = client.infer(MODEL, [tensor], request_id="c2")
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)
        response = result.get_response()
        assert response.id == "c2"
        assert list(response.outputs[0].shape) == [1, length]
        assert response.outputs[0].datatype == "FP32"
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http", required=True)
    parser.add_argument("--grpc", required=True)
    args = parser.parse_args()
    for length in (16, 153600):
        check_http(args.http, length)
        check_grpc(args.grpc, length)
    print("check_echo: both echo servers answer correctly")


if __name__ == "__main__":
    main()
