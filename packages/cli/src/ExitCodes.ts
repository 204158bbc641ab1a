/**
 * The exit codes of `mlops`, one per failure class, derived from the failure's `_tag`. The
 * README's exit-code table is this file; keep them in step.
 *
 * @since 0.1.0
 */
import { ValidationError } from "@effect/cli"

/** @category models */
export const ExitCode = {
  /** Done. */
  Ok: 0,
  /** A bug or a failure mlops has no class for. */
  Unexpected: 1,
  /** The mlops command line or the SGLang flags cannot be parsed (unknown flag, bad value). */
  Usage: 2,
  /** The flags parse but break SGLang's rules (what SGLang would reject at startup). */
  RulesViolated: 3,
  /** The host is not ready for this launch: GPUs, port, model path, Python environment. */
  Preflight: 4,
  /** SGLang started and failed; the cause was classified from its log. */
  LaunchFailed: 5,
  /** The host cannot be reached or trusted: ssh config, connection, authentication, host key. */
  Connection: 6,
  /** A deployment with that name already runs with other arguments (use --replace). */
  DeploymentExists: 7,
  /** A step ran out of time: the launch stalled or hit its cap, a remote command timed out. */
  Timeout: 8,
  /** `diagnose` was given no log: an empty or binary input. */
  NotALog: 9,
  /** Interrupted (Ctrl-C), like a shell's 128 + SIGINT. */
  Interrupted: 130
} as const

/** @category models */
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode]

const byTag: Record<string, ExitCode> = {
  // SGLang flags that do not parse (from Argv)
  UnknownFlag: ExitCode.Usage,
  AmbiguousFlag: ExitCode.Usage,
  InvalidChoice: ExitCode.Usage,
  InvalidValue: ExitCode.Usage,
  MissingValue: ExitCode.Usage,
  MissingRequired: ExitCode.Usage,
  UnexpectedValue: ExitCode.Usage,
  UnexpectedArgument: ExitCode.Usage,
  UnencodableValue: ExitCode.Usage,
  UsageError: ExitCode.Usage,
  // a placement or runtime spec that cannot be used (an unknown kind, bad settings)
  InvalidPlacement: ExitCode.Usage,
  InvalidRuntime: ExitCode.Usage,
  DeploymentNotFound: ExitCode.Usage,
  InvalidHosts: ExitCode.Usage,
  RankNotFound: ExitCode.Usage,
  // a benchmark of a deployment that is not running, not ready, or behind a key not given
  BenchRefused: ExitCode.Usage,
  LogUnreadable: ExitCode.Usage,
  LocalFileError: ExitCode.Usage,
  // an engine's rules (refused before anything runs)
  LaunchRulesViolated: ExitCode.RulesViolated,
  // the host is not ready (preflight, or the same causes met in the log)
  NotEnoughGpus: ExitCode.Preflight,
  NotEnoughHosts: ExitCode.Preflight,
  // the hosts of a deployment across several disagree or cannot meet
  CrossNodeProblems: ExitCode.Preflight,
  GpusBusy: ExitCode.Preflight,
  HostNotReady: ExitCode.Preflight,
  PortUnavailable: ExitCode.Preflight,
  PortInUse: ExitCode.Preflight,
  PythonEnvUnusable: ExitCode.Preflight,
  ModelNotFound: ExitCode.Preflight,
  InvalidModelConfig: ExitCode.Preflight,
  ProbeFailed: ExitCode.Preflight,
  DependencyError: ExitCode.Preflight,
  UnsupportedSglangVersion: ExitCode.Preflight,
  UnsupportedEngineVersion: ExitCode.Preflight,
  // a Slurm cluster that cannot take the job: no Slurm on the host, its preflight, sbatch refusing
  SlurmUnavailable: ExitCode.Preflight,
  SlurmPreflightFailed: ExitCode.Preflight,
  SlurmSubmitRefused: ExitCode.Preflight,
  // a container tool or image that cannot run the server: the tool missing or refused to this
  // user, the image absent or not pulled, without the engine, needing a newer driver, refused its GPUs
  ContainerToolUnavailable: ExitCode.Preflight,
  ImageNotFound: ExitCode.Preflight,
  ImagePullFailed: ExitCode.Preflight,
  EngineNotInImage: ExitCode.Preflight,
  ContainerRunRefused: ExitCode.Preflight,
  // the same container causes, classified from a log
  ContainerEngineUnreachable: ExitCode.Preflight,
  ContainerGpuUnavailable: ExitCode.Preflight,
  CudaDriverTooOld: ExitCode.Preflight,
  SharedMemoryTooSmall: ExitCode.Preflight,
  // classified from the log
  ArgparseError: ExitCode.LaunchFailed,
  AssertionFailure: ExitCode.LaunchFailed,
  InvalidArgument: ExitCode.LaunchFailed,
  MissingSchedulerStrategy: ExitCode.LaunchFailed,
  OOM: ExitCode.LaunchFailed,
  // a job's host RAM, its session hanging up, its loss diverging (classified from its log)
  HostOutOfMemory: ExitCode.LaunchFailed,
  Hangup: ExitCode.LaunchFailed,
  LossDiverged: ExitCode.LaunchFailed,
  TrustRemoteCodeRequired: ExitCode.LaunchFailed,
  UnsupportedConfig: ExitCode.LaunchFailed,
  DistributedError: ExitCode.LaunchFailed,
  CudaError: ExitCode.LaunchFailed,
  ProcessExited: ExitCode.LaunchFailed,
  Unclassified: ExitCode.LaunchFailed,
  NotHealthy: ExitCode.LaunchFailed,
  // the server died while a benchmark ran (its log's failure inside)
  ServerDiedDuringBench: ExitCode.LaunchFailed,
  // one rank of a deployment across several hosts failed (its log's failure inside); all were stopped
  RankFailed: ExitCode.LaunchFailed,
  RanksNotStopped: ExitCode.LaunchFailed,
  // the job ended (its log's failure and Slurm's state), or the scheduler lost it
  SlurmJobEnded: ExitCode.LaunchFailed,
  SlurmJobNotFound: ExitCode.LaunchFailed,
  // the container ended in a way its log does not tell (the OOM killer, a start refused)
  ContainerEnded: ExitCode.LaunchFailed,
  // jobs: a request that cannot run as given, a name taken or unknown, no free GPUs without
  // --wait, a job that failed (its log's failure inside)
  InvalidJob: ExitCode.Usage,
  JobNotFound: ExitCode.Usage,
  JobStillRunning: ExitCode.DeploymentExists,
  JobExists: ExitCode.DeploymentExists,
  GpusUnavailable: ExitCode.Preflight,
  JobFailed: ExitCode.LaunchFailed,
  // a job's code sent (--sync) or its files fetched (pull): a path given wrong, or the host's side failed
  SyncSourceInvalid: ExitCode.Usage,
  SyncLocalUnreadable: ExitCode.Usage,
  SyncSymlinkOutside: ExitCode.Usage,
  SyncTooLarge: ExitCode.Usage,
  SyncRemoteFailed: ExitCode.Preflight,
  PullSourceMissing: ExitCode.Usage,
  PullLocalFailed: ExitCode.Usage,
  PullRemoteFailed: ExitCode.Preflight,
  // reaching and trusting the host
  HostNotFound: ExitCode.Connection,
  ConfigFileError: ExitCode.Connection,
  HostKeyMismatch: ExitCode.Connection,
  HostKeyUnknown: ExitCode.Connection,
  AuthenticationFailed: ExitCode.Connection,
  ConnectionRefused: ExitCode.Connection,
  ConnectTimeout: ExitCode.Connection,
  ConnectionLost: ExitCode.Connection,
  ChannelOpenFailed: ExitCode.Connection,
  ForwardFailed: ExitCode.Connection,
  // deployments
  DeploymentExists: ExitCode.DeploymentExists,
  // another start of the same deployment holds its lock, or an earlier one still runs
  SpawnLocked: ExitCode.DeploymentExists,
  AlreadyRunning: ExitCode.DeploymentExists,
  DeploymentRunning: ExitCode.DeploymentExists,
  // a record whose placement cannot tell whether it runs: kept, like a running one
  RecordUnreadable: ExitCode.DeploymentExists,
  // time
  StartupStalled: ExitCode.Timeout,
  LaunchTimedOut: ExitCode.Timeout,
  CommandTimeout: ExitCode.Timeout,
  TunnelTimeout: ExitCode.Timeout,
  // scancel did not end the job in time
  SlurmJobStillActive: ExitCode.Timeout,
  // a container that did not stop within its grace and the kill after it
  ContainerStillRunning: ExitCode.Timeout,
  // diagnose's input
  NotALog: ExitCode.NotALog
}

/** The tags with a class of their own (for the README table and tests). @category utils */
export const knownTags: ReadonlyArray<string> = Object.keys(byTag)

/** The exit code for a failure value (a tagged error, an @effect/cli validation error, anything). @category utils */
export const fromFailure = (failure: unknown): ExitCode => {
  // @effect/cli's own parse errors share tag names with ours (`InvalidValue`, `InvalidArgument`)
  if (ValidationError.isValidationError(failure)) return ExitCode.Usage
  if (
    typeof failure === "object" &&
    failure !== null &&
    "_tag" in failure &&
    typeof failure._tag === "string"
  ) {
    return byTag[failure._tag] ?? ExitCode.Unexpected
  }
  return ExitCode.Unexpected
}
