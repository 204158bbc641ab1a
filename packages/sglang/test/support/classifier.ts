/** The neutral classifier reading SGLang's lines: what SGLang's log tests exercise. */
import * as Classifier from "@mlops/serve/Classifier"
import type { Stream } from "effect"
import { logs } from "../../src/internal/logs/index.js"

export type { ExitStatus } from "@mlops/serve/Classifier"

const engines = [logs]

export const make = (): Classifier.Classifier => Classifier.make(engines)
export const classify = <E, R>(lines: Stream.Stream<string, E, R>, exit?: Classifier.ExitStatus) =>
  Classifier.classify(lines, exit, engines)
export const classifyText = (text: string, exit?: Classifier.ExitStatus) =>
  Classifier.classifyText(text, exit, engines)
export const diagnose = (text: string, exit?: Classifier.ExitStatus) =>
  Classifier.diagnose(text, exit, engines)
