// llama.cpp's Vulkan backend (the prebuilt libggml-vulkan.so of
// @node-llama-cpp/linux-x64-vulkan), unmodified, as a client of vkprof (issue 9).
//
//   node run.mjs MODEL.gguf [--tokens N] [--prompt TEXT] [--batch B] [--threads T] [--verbose]
//
// Greedy-decodes N tokens after a fixed prompt and prints ONE JSON line on
// stdout: {"tokens": [...], "gpu": "vulkan", "device": ..., "offloaded": "L/L", ...}.
// Exits 3 when the decode did not run on a Vulkan device: node-llama-cpp falls
// back to the CPU silently (no device, GGML_VK_VISIBLE_DEVICES unset on
// lavapipe), so every one of these must hold:
//   - llama.gpu is "vulkan" (the Vulkan build was loaded, not the CPU one);
//   - getGpuDeviceNames() names at least one device;
//   - llama.cpp logged "offloaded L/L layers to GPU" with every layer offloaded,
//     a "Vulkan<N> model buffer" and a "Vulkan<N> KV buffer".
// On a CPU-only decode the first fails, and with the Vulkan build but no
// device the loader reports 0 layers offloaded and no Vulkan buffers.
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

function parseArgs(argv) {
    const o = {model: null, tokens: 16, prompt: "The quick brown fox", batch: 1, threads: 2, verbose: false};
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i], v = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        if (a === "--tokens") o.tokens = Number(v());
        else if (a === "--prompt") o.prompt = v();
        else if (a === "--batch") o.batch = Number(v());
        else if (a === "--threads") o.threads = Number(v());
        else if (a === "--verbose") o.verbose = true;
        else if (a.startsWith("-") || o.model) throw new Error(`unexpected argument ${a}`);
        else o.model = a;
    }
    for (const k of ["tokens", "batch", "threads"])
        if (!Number.isInteger(o[k]) || o[k] < 1) throw new Error(`--${k} must be a positive integer`);
    if (!o.model) throw new Error("usage: node run.mjs MODEL.gguf [--tokens N] [--prompt TEXT] [--batch B] [--threads T] [--verbose]");
    return o;
}

function fail(code, msg) {
    process.stderr.write(`run.mjs: ${msg}\n`);
    process.exit(code);
}

let opt;
try {
    opt = parseArgs(process.argv.slice(2));
} catch (e) {
    fail(2, e.message);
}

const logs = [];
const t0 = performance.now();
const llama = await getLlama({
    gpu: "vulkan", build: "never", skipDownload: true, progressLogs: false,
    logLevel: LlamaLogLevel.debug,  // the "ggml_vulkan: 0 = ..." device line is debug
    logger: (level, message) => {
        logs.push(message);
        if (opt.verbose || level === "error" || level === "fatal") process.stderr.write(`[${level}] ${message}\n`);
    },
});
const devices = await llama.getGpuDeviceNames();
const model = await llama.loadModel({modelPath: opt.model, gpuLayers: "max"});
const context = await model.createContext({contextSize: 256, batchSize: opt.batch, threads: opt.threads});
const tLoaded = performance.now();

const sequence = context.getSequence();
const prompt = [model.tokens.bos, ...model.tokenize(opt.prompt, false)];
const tokens = [];
for await (const t of sequence.evaluate(prompt, {temperature: 0, yieldEogToken: true})) {
    tokens.push(t);
    if (tokens.length >= opt.tokens) break;
}
const tDone = performance.now();

const joined = logs.join("\n");
const off = /offloaded (\d+)\/(\d+) layers to GPU/.exec(joined);
// "ggml_vulkan: 0 = llvmpipe (...) (llvmpipe) | uma: 0 | fp16: 1 | ... | int dot: 0 | ..."
const ggmlDevice = /ggml_vulkan: \d+ = (.*)/.exec(joined);
const problems = [];
if (llama.gpu !== "vulkan") problems.push(`llama.gpu is ${JSON.stringify(llama.gpu)}, not "vulkan"`);
if (devices.length === 0) problems.push("getGpuDeviceNames() found no device");
if (!off) problems.push("llama.cpp logged no 'offloaded L/L layers to GPU' line");
else if (off[1] !== off[2] || Number(off[1]) === 0) problems.push(`only ${off[1]}/${off[2]} layers were offloaded`);
if (!/Vulkan\d+ model buffer size/.test(joined)) problems.push("no Vulkan model buffer");
if (!/Vulkan\d+ KV buffer size/.test(joined)) problems.push("no Vulkan KV buffer");
if (tokens.length !== opt.tokens) problems.push(`decoded ${tokens.length} tokens, not ${opt.tokens}`);

console.log(JSON.stringify({
    tokens, gpu: llama.gpu, device: devices[0] ?? null, offloaded: off ? `${off[1]}/${off[2]}` : null,
    ggml_device: ggmlDevice ? ggmlDevice[1].trim() : null,
    prompt_tokens: prompt.length, text: model.detokenize(tokens),
    load_ms: Math.round(tLoaded - t0), decode_ms: Math.round(tDone - tLoaded),
}));

await context.dispose();
await model.dispose();
await llama.dispose();
if (problems.length) fail(3, `not a Vulkan decode: ${problems.join("; ")}`);
