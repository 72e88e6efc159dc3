//! Which shard of a grid this process runs when a cluster scheduler started it
//! (`run --shard from-env`): one command line for every task of a Kubernetes Indexed Job or a
//! Slurm job array, the shard read from the variables the scheduler sets for each task.

use crate::error::{Error, Result};

/// The shard (`I` of `N`, 1-based) named by the environment `var` reads:
/// - a Kubernetes Indexed Job: `JOB_COMPLETION_INDEX` (0-based, set by Kubernetes) and
///   `JOB_COMPLETIONS` (the Job's `completions`, passed down in the pod spec);
/// - a Slurm job array: `SLURM_ARRAY_TASK_ID` and `SLURM_ARRAY_TASK_COUNT`, with
///   `SLURM_ARRAY_TASK_MIN` and `SLURM_ARRAY_TASK_STEP` (`--array=0-7`, `1-8`, `0-14:2`).
///
/// Neither, both, or values that do not make one shard are errors: a task that guessed would
/// run another task's cells, or none.
pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<(usize, usize)> {
    let bad = |why: String| Error::ShardFromEnv { why };
    let number = |name: &str| -> Result<Option<usize>> {
        var(name)
            .map(|v| v.trim().parse::<usize>().map_err(|_| bad(format!("{name}={v:?} is not a whole number"))))
            .transpose()
    };
    let kubernetes = number("JOB_COMPLETION_INDEX")?;
    let slurm = number("SLURM_ARRAY_TASK_ID")?;
    let (index, count) = match (kubernetes, slurm) {
        (Some(_), Some(_)) => {
            return Err(bad("both JOB_COMPLETION_INDEX (Kubernetes) and SLURM_ARRAY_TASK_ID (Slurm) are set".into()))
        }
        (None, None) => {
            return Err(bad(
                "neither JOB_COMPLETION_INDEX and JOB_COMPLETIONS (a Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (a Slurm job array) are set: give --shard I/N".into(),
            ))
        }
        (Some(index), None) => {
            let count = number("JOB_COMPLETIONS")?.ok_or_else(|| {
                bad("JOB_COMPLETION_INDEX is set but JOB_COMPLETIONS is not: set it to the Job's completions in the pod spec".into())
            })?;
            let index = index.checked_add(1).ok_or_else(|| {
                bad(format!("JOB_COMPLETION_INDEX={index} is past any shard of JOB_COMPLETIONS={count}"))
            })?;
            (index, count)
        }
        (None, Some(id)) => {
            let count = number("SLURM_ARRAY_TASK_COUNT")?
                .ok_or_else(|| bad("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not".into()))?;
            let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let step = number("SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1);
            if id < min || (id - min) % step != 0 {
                return Err(bad(format!(
                    "SLURM_ARRAY_TASK_ID={id} is not in the array from {min} by {step}: submit a plain range such as --array=1-{count}"
                )));
            }
            // At most the count: a task id past the array's end is refused below, never wrapped.
            (((id - min) / step).saturating_add(1), count)
        }
    };
    if count == 0 || index > count {
        return Err(bad(format!("the scheduler's variables make shard {index} of {count}")));
    }
    Ok((index, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<(usize, usize)> {
        from_env(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn kubernetes_and_slurm_tasks_name_their_shard() {
        assert_eq!(from(&[("JOB_COMPLETION_INDEX", "0"), ("JOB_COMPLETIONS", "4")]).unwrap(), (1, 4));
        assert_eq!(from(&[("JOB_COMPLETION_INDEX", "3"), ("JOB_COMPLETIONS", "4")]).unwrap(), (4, 4));
        let slurm = |id: &str, min: &str, step: &str| {
            from(&[
                ("SLURM_ARRAY_TASK_ID", id),
                ("SLURM_ARRAY_TASK_COUNT", "4"),
                ("SLURM_ARRAY_TASK_MIN", min),
                ("SLURM_ARRAY_TASK_STEP", step),
            ])
        };
        assert_eq!(slurm("1", "1", "1").unwrap(), (1, 4));
        assert_eq!(slurm("3", "0", "1").unwrap(), (4, 4));
        assert_eq!(slurm("6", "0", "2").unwrap(), (4, 4));
        for bad in [slurm("3", "0", "2"), slurm("9", "0", "1"), slurm("0", "1", "1")] {
            assert!(bad.is_err(), "{bad:?}");
        }
    }

    #[test]
    fn missing_partial_or_conflicting_variables_are_errors() {
        let err = |vars: &[(&str, &str)]| from(vars).unwrap_err().to_string();
        assert!(err(&[]).contains("give --shard I/N"));
        assert!(err(&[("JOB_COMPLETION_INDEX", "1")]).contains("JOB_COMPLETIONS is not"));
        assert!(err(&[("JOB_COMPLETION_INDEX", "x"), ("JOB_COMPLETIONS", "2")]).contains("not a whole number"));
        assert!(err(&[("JOB_COMPLETION_INDEX", "0"), ("SLURM_ARRAY_TASK_ID", "1")]).contains("both"));
        assert!(err(&[("JOB_COMPLETION_INDEX", "4"), ("JOB_COMPLETIONS", "4")]).contains("shard 5 of 4"));
        let max = usize::MAX.to_string();
        assert!(err(&[("JOB_COMPLETION_INDEX", &max), ("JOB_COMPLETIONS", "2")]).contains("past any shard"));
        let slurm_max = [("SLURM_ARRAY_TASK_ID", max.as_str()), ("SLURM_ARRAY_TASK_COUNT", "2")];
        assert!(err(&slurm_max).contains("shard"), "{}", err(&slurm_max));
    }
}
