/**
 * Test fixtures: config.pbtxt texts shaped like the examples in Triton's documentation and example
 * model repository (densenet_onnx, simple, simple_sequence, simple_dyna_sequence, simple_identity, the
 * ensemble and stateful-model examples, optimization and instance-group snippets), written for Nereid's
 * tests. Not used at run time.
 */

export const DENSENET_ONNX = `
name: "densenet_onnx"
platform: "onnxruntime_onnx"
max_batch_size : 0
input [
  {
    name: "data_0"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, 224, 224 ]
    reshape { shape: [ 1, 3, 224, 224 ] }
  }
]
output [
  {
    name: "fc6_1"
    data_type: TYPE_FP32
    dims: [ 1000 ]
    reshape { shape: [ 1, 1000, 1, 1 ] }
    label_filename: "densenet_labels.txt"
  }
]
`;

/** What Triton answers for GET /v2/models/densenet_onnx/config on a machine without GPUs. */
export const DENSENET_ONNX_TRITON_JSON = {
  name: 'densenet_onnx',
  platform: 'onnxruntime_onnx',
  backend: 'onnxruntime',
  runtime: '',
  version_policy: { latest: { num_versions: 1 } },
  max_batch_size: 0,
  input: [
    {
      name: 'data_0',
      data_type: 'TYPE_FP32',
      format: 'FORMAT_NCHW',
      dims: [3, 224, 224],
      reshape: { shape: [1, 3, 224, 224] },
      is_shape_tensor: false,
      allow_ragged_batch: false,
      optional: false,
      is_non_linear_format_io: false,
    },
  ],
  output: [
    {
      name: 'fc6_1',
      data_type: 'TYPE_FP32',
      dims: [1000],
      reshape: { shape: [1, 1000, 1, 1] },
      label_filename: 'densenet_labels.txt',
      is_shape_tensor: false,
      is_non_linear_format_io: false,
    },
  ],
  batch_input: [],
  batch_output: [],
  optimization: {
    priority: 'PRIORITY_DEFAULT',
    input_pinned_memory: { enable: true },
    output_pinned_memory: { enable: true },
    gather_kernel_buffer_threshold: 0,
    eager_batching: false,
  },
  instance_group: [
    {
      name: 'densenet_onnx',
      kind: 'KIND_CPU',
      count: 2,
      gpus: [],
      secondary_devices: [],
      profile: [],
      passive: false,
      host_policy: '',
    },
  ],
  default_model_filename: 'model.onnx',
  cc_model_filenames: {},
  metric_tags: {},
  parameters: {},
  model_warmup: [],
};

export const SIMPLE = `
# The add/sub example model.
name: "simple"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  {
    name: "INPUT0"
    data_type: TYPE_INT32
    dims: [ 16 ]
  },
  {
    name: "INPUT1"
    data_type: TYPE_INT32
    dims: [ 16 ]
  }
]
output [
  {
    name: "OUTPUT0"
    data_type: TYPE_INT32
    dims: [ 16 ]
  },
  {
    name: "OUTPUT1"
    data_type: TYPE_INT32
    dims: [ 16 ]
  }
]
`;

export const SIMPLE_IDENTITY_PYTHON = `
name: "simple_identity"
backend: "python"
max_batch_size: 8

input [
  {
    name: "INPUT0"
    data_type: TYPE_STRING
    dims: [ -1 ]
  }
]
output [
  {
    name: "OUTPUT0"
    data_type: TYPE_STRING
    dims: [ -1 ]
  }
]
`;

export const SIMPLE_SEQUENCE = `
name: "simple_sequence"
platform: "onnxruntime_onnx"
max_batch_size: 8
sequence_batching {
  control_input [
    {
      name: "START"
      control [
        {
          kind: CONTROL_SEQUENCE_START
          int32_false_true: [ 0, 1 ]
        }
      ]
    },
    {
      name: "READY"
      control [
        {
          kind: CONTROL_SEQUENCE_READY
          int32_false_true: [ 0, 1 ]
        }
      ]
    }
  ]
}
input [
  {
    name: "INPUT"
    data_type: TYPE_INT32
    dims: [ 1 ]
  }
]
output [
  {
    name: "OUTPUT"
    data_type: TYPE_INT32
    dims: [ 1 ]
  }
]
instance_group [
  {
    kind: KIND_CPU
  }
]
`;

export const SIMPLE_DYNA_SEQUENCE = `
name: "simple_dyna_sequence"
platform: "onnxruntime_onnx"
max_batch_size: 8
sequence_batching {
    max_sequence_idle_microseconds: 10000000
    oldest {
      max_candidate_sequences: 1024
      max_queue_delay_microseconds: 10000
    }

  control_input [
    {
      name: "START"
      control [
        {
          kind: CONTROL_SEQUENCE_START
          int32_false_true: [ 0, 1 ]
        }
      ]
    },
    {
      name: "END"
      control [
        {
          kind: CONTROL_SEQUENCE_END
          int32_false_true: [ 0, 1 ]
        }
      ]
    },
    {
      name: "READY"
      control [
        {
          kind: CONTROL_SEQUENCE_READY
          int32_false_true: [ 0, 1 ]
        }
      ]
    },
    {
      name: "CORRID"
      control [
        {
          kind: CONTROL_SEQUENCE_CORRID
          data_type: TYPE_UINT64
        }
      ]
    }
  ]
}
input [
  {
    name: "INPUT"
    data_type: TYPE_INT32
    dims: [ 1 ]
  }
]
output [
  {
    name: "OUTPUT"
    data_type: TYPE_INT32
    dims: [ 1 ]
  }
]
parameters [
  {
    key: "execute_delay_ms"
    value: { string_value: "3" }
  }
]
instance_group [
  {
    count: 2
    kind: KIND_CPU
  }
]
`;

/** The image pipeline from the ensemble documentation. */
export const ENSEMBLE_IMAGE = `
name: "ensemble_model"
platform: "ensemble"
max_batch_size: 1
input [
  {
    name: "IMAGE"
    data_type: TYPE_STRING
    dims: [ 1 ]
  }
]
output [
  {
    name: "CLASSIFICATION"
    data_type: TYPE_FP32
    dims: [ 1000 ]
  },
  {
    name: "SEGMENTATION"
    data_type: TYPE_FP32
    dims: [ 3, 224, 224 ]
  }
]
ensemble_scheduling {
  step [
    {
      model_name: "image_preprocess_model"
      model_version: -1
      input_map {
        key: "RAW_IMAGE"
        value: "IMAGE"
      }
      output_map {
        key: "PREPROCESSED_OUTPUT"
        value: "preprocessed_image"
      }
    },
    {
      model_name: "classification_model"
      model_version: -1
      input_map {
        key: "FORMATTED_IMAGE"
        value: "preprocessed_image"
      }
      output_map {
        key: "CLASSIFICATION_OUTPUT"
        value: "CLASSIFICATION"
      }
    },
    {
      model_name: "segmentation_model"
      model_version: -1
      input_map {
        key: "FORMATTED_IMAGE"
        value: "preprocessed_image"
      }
      output_map {
        key: "SEGMENTATION_OUTPUT"
        value: "SEGMENTATION"
      }
    }
  ]
}
`;

/** The two-step ensemble with max_inflight_requests and comma-separated map entries. */
export const ENSEMBLE_INFLIGHT = `
name: "pipeline"
platform: "ensemble"
input [ { name: "IMAGE" data_type: TYPE_UINT8 dims: [ -1 ] } ]
output [ { name: "RESULT" data_type: TYPE_FP32 dims: [ 10 ] } ]
ensemble_scheduling {
  max_inflight_requests: 16

  step [
    {
      model_name: "dali_preprocess"
      model_version: -1
      input_map { key: "RAW_IMAGE", value: "IMAGE" }
      output_map { key: "PREPROCESSED_IMAGE", value: "preprocessed" }
    },
    {
      model_name: "onnx_inference"
      model_version: -1
      input_map { key: "INPUT", value: "preprocessed" }
      output_map { key: "OUTPUT", value: "RESULT" }
    }
  ]
}
`;

/** The direct-strategy stateful model from the sequence batcher documentation, with implicit state. */
export const DIRECT_STATEFUL = `
name: "direct_stateful_model"
backend: "onnxruntime"
max_batch_size: 2
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  direct { }
  control_input [
    {
      name: "START"
      control [
        {
          kind: CONTROL_SEQUENCE_START
          fp32_false_true: [ 0, 1 ]
        }
      ]
    },
    {
      name: "READY"
      control [
        {
          kind: CONTROL_SEQUENCE_READY
          fp32_false_true: [ 0, 1 ]
        }
      ]
    }
  ]
  state [
    {
      input_name: "INPUT_STATE"
      output_name: "OUTPUT_STATE"
      data_type: TYPE_INT32
      dims: [ -1 ]
      initial_state: {
       data_type: TYPE_INT32
       dims: [ 1 ]
       zero_data: true
       name: "initial state"
      }
    }
  ]
}
input [
  {
    name: "INPUT"
    data_type: TYPE_FP32
    dims: [ 100, 100 ]
  }
]
output [
  {
    name: "OUTPUT"
    data_type: TYPE_FP32
    dims: [ 10 ]
  }
]
instance_group [
  {
    count: 2
  }
]
`;

/** Everything else a config can carry: accelerators, rate limiter, warmup, cache, metrics, agents. */
export const KITCHEN_SINK = `
name: "kitchen_sink"
backend: "onnxruntime"
max_batch_size: 16
version_policy: { specific: { versions: [1, 3] } }
input [
  {
    name: "INPUT"
    data_type: TYPE_FP32
    dims: [ -1 ]
    allow_ragged_batch: true
  }
]
output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ -1 ] } ]
batch_input [
  {
    kind: BATCH_ACCUMULATED_ELEMENT_COUNT
    target_name: "INDEX"
    data_type: TYPE_FP32
    source_input: "INPUT"
  }
]
batch_output [
  {
    target_name: "OUTPUT"
    kind: BATCH_SCATTER_WITH_INPUT_SHAPE
    source_input: "INPUT"
  }
]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  priority_levels: 2
  default_priority_level: 1
  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 2000 allow_timeout_override: true max_queue_size: 5 }
  priority_queue_policy { key: 2 value { max_queue_size: 7 } }
}
optimization { execution_accelerators {
  cpu_execution_accelerator : [ {
    name : "openvino"
    parameters { key: "num_threads" value: "4" }
  }]
}
  graph { level: 1 }
  cuda { graphs: true graph_spec [ { batch_size: 4 input { key: "INPUT" value { dim: [ 8 ] } } } ] }
}
instance_group [
  {
    count: 1
    kind: KIND_CPU
    rate_limiter {
      resources [
        {
          name: "R1"
          count: 4
        },
        {
          name: "R2"
          global: True
          count: 2
        }
      ]
      priority: 2
    }
    host_policy: "policy_0"
  }
]
cc_model_filenames [ { key: "7.5" value: "model_T4.onnx" } ]
metric_tags { key: "team" value: "vision" }
parameters { key: "intra_op_thread_count" value: { string_value: "2" } }
model_warmup [
  {
    name: "warmup 1"
    batch_size: 1
    inputs {
      key: "INPUT"
      value: {
        data_type: TYPE_FP32
        dims: 16
        random_data: true
      }
    }
    count: 2
  }
]
model_operations { op_library_filename: "libcustom_ops.so" }
model_transaction_policy { decoupled: false }
model_repository_agents { agents [ { name: "checksum" parameters { key: "MD5:1/model.onnx" value: "abc" } } ] }
response_cache { enable: true }
model_metrics {
  metric_control: [
    {
      metric_identifier: {
        family: "nv_inference_first_response_histogram_ms"
      }
      histogram_options: {
        buckets: [ 1, 2, 4, 8]
      }
    }
  ]
}
`;
