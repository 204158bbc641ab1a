/**
 * The model cannot be had: a path that is neither a folder nor a repo id, a repo id that does not
 * parse, a gated or missing repo, no network or offline mode, a folder without config.json
 * (transformers / huggingface_hub wordings since 2023, and the engines' own when their loader
 * finds no weights or config in a directory); and a checkpoint with custom code that
 * needs --trust-remote-code.
 * @internal
 */
import * as F from "../../../Failures.js"
import { base, firstLine, reasonOf, type Signature, says, Tier } from "../../../LogSignature.js"

const NOT_FOUND =
  /is not a local folder and is not a valid model identifier|HFValidationError|Repo id must be in the form|RepositoryNotFoundError|Repository Not Found for url|gated repo|Access to model \S+ is restricted|(?:401|403|404|429) Client Error|GatedRepoError|couldn't connect to 'https:\/\/huggingface\.co'|OfflineModeIsEnabled|offline mode is enabled|does not appear to have a file named|No supported config format found in|HfHubHTTPError|Client Error.*(?:huggingface\.co|hf\.co|cdn-lfs)|Can't load (?:the )?(?:config|tokenizer|configuration) (?:for|of)|LocalEntryNotFoundError|EntryNotFoundError|No such file or directory: '[^']*(?:config\.json|\.safetensors|tokenizer[^']*)'|huggingface\.co\b.*(?:Max retries exceeded|timed out|ConnectionError|NameResolutionError)|(?:ConnectionError|MaxRetryError|ConnectTimeout).*huggingface\.co|Invalid repository ID|Cannot find any (?:safetensors )?model weights with|No model weights found in|Could not find checkpoint files|Can't find config file in|Cannot find adapter config file in/i

const modelOf = (text: string): string | undefined => {
  const m =
    /^(?:\w+(?:\.\w+)*: )?(\S+) is not a local folder/.exec(text) ??
    /Repo id must be in the form[^:]*: '([^']+)'/.exec(text) ??
    /Access to model (\S+) is restricted/.exec(text) ??
    /huggingface\.co\/(?:api\/models\/)?([\w.-]+\/[\w.-]+)/.exec(text)
  return m ? m[1] : undefined
}

export const modelNotFound: Signature = {
  id: "model-not-found",
  tag: "ModelNotFound",
  tier: Tier.Root,
  variants: [
    {
      from: "transformers 4.x",
      text: "OSError: /models/x is not a local folder and is not a valid model identifier listed on 'https://huggingface.co/models'"
    },
    {
      from: "huggingface_hub >= 0.17",
      text: "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/root/DeepSeek-V2-Lite'."
    },
    { from: "transformers 4.40+", text: "OSError: You are trying to access a gated repo." },
    {
      from: "huggingface_hub",
      text: "Access to model meta-llama/Llama-2-7b-chat-hf is restricted. You must be authenticated to access it."
    },
    {
      from: "huggingface_hub",
      text: "huggingface_hub.utils._http.OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/models/bigcode/starcoder: offline mode is enabled."
    },
    {
      from: "transformers",
      text: "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the cached files."
    }
  ],
  match: says(NOT_FOUND),
  build: (s) => {
    const reason = reasonOf(s, NOT_FOUND)
    const model = modelOf(firstLine(reason)) ?? modelOf(s.flat)
    const offline =
      /couldn't connect|offline mode|Max retries|timed out|ConnectionError|NameResolution/i.test(s.flat)
    const gated = /gated|restricted|401|403/i.test(s.flat)
    return new F.ModelNotFound({
      ...base(
        s,
        reason,
        offline
          ? {
              action:
                "the host cannot reach huggingface.co: download the model there first and pass its local path"
            }
          : gated
            ? {
                action:
                  "the repo is gated: accept its licence on huggingface.co and log in on the host (`hf auth login`, or HF_TOKEN)"
              }
            : {
                action:
                  "check --model-path (a local directory with config.json, or an existing repo id); for a private repo log in with `hf auth login`"
              }
      ),
      ...(model === undefined ? {} : { model })
    })
  }
}

// the messages, not a user's own `LLM(..., trust_remote_code=True)` pasted beside them
const REMOTE_CODE =
  /(?:option|argument|setting|set) `?trust_remote_code=True|requires you to execute the configuration file in that repo|contains custom code which must be executed/i

export const trustRemoteCode: Signature = {
  id: "trust-remote-code",
  tag: "TrustRemoteCodeRequired",
  tier: Tier.Root,
  variants: [
    {
      from: "transformers < 4.40",
      text: "ValueError: Loading mosaicml/mpt-7b-chat requires you to execute the configuration file in that repo on your local machine. Make sure you have read the code there to avoid malicious use, then set the option `trust_remote_code=True` to remove this error."
    },
    {
      from: "transformers >= 4.40",
      text: "The repository for X contains custom code which must be executed to correctly load the model. You can inspect the repository content at https://hf.co/X. Please pass the argument `trust_remote_code=True` to allow custom code to be run."
    },
    {
      from: "vLLM 0.6+",
      text: "Failed to load the model config. If the model is a custom model not yet available in the HuggingFace transformers library, consider setting `trust_remote_code=True` in LLM or using the `--trust-remote-code` flag in the CLI."
    }
  ],
  match: says(REMOTE_CODE),
  build: (s) =>
    new F.TrustRemoteCodeRequired({
      ...base(s, reasonOf(s, REMOTE_CODE), { flags: { "--trust-remote-code": null } })
    })
}
