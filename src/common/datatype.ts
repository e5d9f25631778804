/**
 * The one datatype table: KServe/Triton wire name ↔ model-config enum name ↔ onnxruntime type ↔ numpy
 * dtype ↔ element byte size. Nothing else in the code base spells these mappings out.
 */

export type DataType =
  | 'BOOL'
  | 'UINT8'
  | 'UINT16'
  | 'UINT32'
  | 'UINT64'
  | 'INT8'
  | 'INT16'
  | 'INT32'
  | 'INT64'
  | 'FP16'
  | 'FP32'
  | 'FP64'
  | 'BYTES'
  | 'BF16';

/** model_config.proto DataType enum names. */
export type ConfigDataType =
  | 'TYPE_INVALID'
  | 'TYPE_BOOL'
  | 'TYPE_UINT8'
  | 'TYPE_UINT16'
  | 'TYPE_UINT32'
  | 'TYPE_UINT64'
  | 'TYPE_INT8'
  | 'TYPE_INT16'
  | 'TYPE_INT32'
  | 'TYPE_INT64'
  | 'TYPE_FP16'
  | 'TYPE_FP32'
  | 'TYPE_FP64'
  | 'TYPE_STRING'
  | 'TYPE_BF16';

export interface DataTypeInfo {
  readonly name: DataType;
  readonly configName: ConfigDataType;
  /** TRITONSERVER_DataType / model_config enum number (also the python backend's numeric code). */
  readonly code: number;
  /** Bytes per element; 0 for BYTES (variable). */
  readonly byteSize: number;
  /** onnxruntime-node tensor type name, undefined where ORT has none. */
  readonly ortType: string | undefined;
  /** numpy dtype string. */
  readonly numpy: string;
}

const TABLE: readonly DataTypeInfo[] = [
  { name: 'BOOL', configName: 'TYPE_BOOL', code: 1, byteSize: 1, ortType: 'bool', numpy: 'bool' },
  { name: 'UINT8', configName: 'TYPE_UINT8', code: 2, byteSize: 1, ortType: 'uint8', numpy: 'uint8' },
  { name: 'UINT16', configName: 'TYPE_UINT16', code: 3, byteSize: 2, ortType: 'uint16', numpy: 'uint16' },
  { name: 'UINT32', configName: 'TYPE_UINT32', code: 4, byteSize: 4, ortType: 'uint32', numpy: 'uint32' },
  { name: 'UINT64', configName: 'TYPE_UINT64', code: 5, byteSize: 8, ortType: 'uint64', numpy: 'uint64' },
  { name: 'INT8', configName: 'TYPE_INT8', code: 6, byteSize: 1, ortType: 'int8', numpy: 'int8' },
  { name: 'INT16', configName: 'TYPE_INT16', code: 7, byteSize: 2, ortType: 'int16', numpy: 'int16' },
  { name: 'INT32', configName: 'TYPE_INT32', code: 8, byteSize: 4, ortType: 'int32', numpy: 'int32' },
  { name: 'INT64', configName: 'TYPE_INT64', code: 9, byteSize: 8, ortType: 'int64', numpy: 'int64' },
  { name: 'FP16', configName: 'TYPE_FP16', code: 10, byteSize: 2, ortType: 'float16', numpy: 'float16' },
  { name: 'FP32', configName: 'TYPE_FP32', code: 11, byteSize: 4, ortType: 'float32', numpy: 'float32' },
  { name: 'FP64', configName: 'TYPE_FP64', code: 12, byteSize: 8, ortType: 'float64', numpy: 'float64' },
  { name: 'BYTES', configName: 'TYPE_STRING', code: 13, byteSize: 0, ortType: 'string', numpy: 'object' },
  { name: 'BF16', configName: 'TYPE_BF16', code: 14, byteSize: 2, ortType: 'bfloat16', numpy: 'bfloat16' },
];

const BY_NAME = new Map<string, DataTypeInfo>(TABLE.map((t) => [t.name, t]));
const BY_CONFIG = new Map<string, DataTypeInfo>(TABLE.map((t) => [t.configName, t]));
const BY_ORT = new Map<string, DataTypeInfo>(TABLE.map((t) => [t.ortType ?? '', t]));

export const ALL_DATATYPES: readonly DataType[] = TABLE.map((t) => t.name);

export function isDataType(name: string): name is DataType {
  return BY_NAME.has(name);
}

export function dataTypeInfo(name: DataType): DataTypeInfo {
  return BY_NAME.get(name)!;
}

/** TYPE_FP32 → FP32; undefined for TYPE_INVALID or unknown names. */
export function fromConfigDataType(configName: string): DataType | undefined {
  return BY_CONFIG.get(configName)?.name;
}

export function toConfigDataType(name: DataType): ConfigDataType {
  return BY_NAME.get(name)!.configName;
}

/** onnxruntime type name (e.g. 'float32') → DataType. */
export function fromOrtType(ortType: string): DataType | undefined {
  return BY_ORT.get(ortType)?.name;
}

export function byteSizeOf(name: DataType): number {
  return BY_NAME.get(name)!.byteSize;
}
