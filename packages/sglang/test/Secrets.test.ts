import { assert, describe, it } from "@effect/vitest"
import * as Secrets from "@mlops/serve/Secrets"
import { engine } from "../src/SglangEngine.js"

// SGLang's flags decide which take text (a count named ...-token is not a secret)
const flags = engine.latestFlags

describe("Secrets", () => {
  it("secret flags: key/token at the end of a text flag's name, secret/password anywhere; not counts", () => {
    for (const flag of [
      "--api-key",
      "--admin-api-key",
      "--ssl-keyfile-password",
      "--hf-token",
      "--my-secret-x"
    ]) {
      assert.isTrue(Secrets.isSecretFlag(flag, flags), flag)
    }
    for (const flag of [
      "--max-total-tokens",
      "--speculative-num-draft-tokens",
      "--speculative-token-map",
      "--kt-max-deferred-experts-per-token",
      "--tokenizer-path",
      "--ssl-keyfile",
      "--model-path"
    ]) {
      assert.isFalse(Secrets.isSecretFlag(flag, flags), flag)
    }
    // argparse's unique prefix names the same flag
    assert.isTrue(Secrets.isSecretFlag("--admin-api-k", flags))
  })

  it("split shows *** for every form and reveal puts the values back", () => {
    const argv = ["--model-path", "/m", "--api-key", "sk-1", "--admin-api-key=adm-2", "--tp", "2"]
    const { shown, secrets } = Secrets.split(argv, flags)
    assert.deepStrictEqual(shown, [
      "--model-path",
      "/m",
      "--api-key",
      "***",
      "--admin-api-key=***",
      "--tp",
      "2"
    ])
    assert.deepStrictEqual(secrets, [
      { flag: "--api-key", value: "sk-1" },
      { flag: "--admin-api-key", value: "adm-2" }
    ])
    assert.deepStrictEqual(Secrets.reveal(shown, secrets, flags), argv)
    // a fix that moved things around keeps each value with its flag
    const fixed = ["--admin-api-key=***", "--tp-size", "2", "--model-path", "/m", "--api-key", "***"]
    assert.deepStrictEqual(Secrets.reveal(fixed, secrets, flags), [
      "--admin-api-key=adm-2",
      "--tp-size",
      "2",
      "--model-path",
      "/m",
      "--api-key",
      "sk-1"
    ])
  })

  it("resolved args: secret fields with a value become ***, others stay", () => {
    const shown = Secrets.redactFields(
      { api_key: "sk-1", admin_api_key: null, tp_size: 2, model_path: "/m" },
      flags
    )
    assert.deepStrictEqual(shown, { api_key: "***", admin_api_key: null, tp_size: 2, model_path: "/m" })
  })

  it("environment: names only, and a salted digest that tells the same values from others", () => {
    assert.deepStrictEqual(Secrets.shownEnv({ HF_TOKEN: "hf_x", A: "1" }), ["A=***", "HF_TOKEN=***"])
    const env = { HF_TOKEN: "hf_abc" }
    const secrets = [{ flag: "--api-key", value: "sk-1" }]
    const digest = Secrets.digest(env, secrets)
    assert.notInclude(JSON.stringify(digest), "hf_abc")
    assert.isTrue(Secrets.matches(digest, { HF_TOKEN: "hf_abc" }, secrets))
    assert.isFalse(Secrets.matches(digest, { HF_TOKEN: "hf_abd" }, secrets))
    assert.isFalse(Secrets.matches(digest, env, [{ flag: "--api-key", value: "sk-2" }]))
    // the salt differs per launch: equal inputs do not give equal digests across launches
    assert.notStrictEqual(Secrets.digest(env, secrets).sha256, digest.sha256)
  })

  it("hidden values: secret flags and secret-named environment variables; scrub replaces them", () => {
    const hidden = Secrets.hiddenValues([{ flag: "--api-key", value: "sk-123456" }], {
      HF_TOKEN: "hf_abcdef",
      CUDA_VISIBLE_DEVICES: "0,1"
    })
    assert.deepStrictEqual(hidden, ["sk-123456", "hf_abcdef"])
    assert.strictEqual(
      Secrets.scrub("key sk-123456 token hf_abcdef on 0,1", hidden),
      "key *** token *** on 0,1"
    )
  })
})
