//! Shared-prefix chat: groups share a system prompt; multi-turn users resend their prompt.

use infertune::probe::dataset::plan;
use infertune::probe::{Api, DatasetSpec, SharedPrefix, WorkloadSpec};
use serde_json::Value;

fn prompts(multi_turn: bool) -> Vec<Vec<u64>> {
    let mut workload = WorkloadSpec::closed_random(1, 1, 1, 1);
    workload.api = Api::Completions;
    workload.dataset = DatasetSpec::SharedPrefix(SharedPrefix {
        num_groups: 2,
        prompts_per_group: 2,
        system_prompt_len: 10,
        question_len: 5,
        output_len: 3,
        multi_turn,
    });
    plan(&workload, 8)
        .unwrap()
        .iter()
        .map(|request| {
            assert_eq!((request.input_tokens, request.max_tokens), (15, 3));
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let ids = body["prompt"].as_array().unwrap();
            ids.iter().map(|v| v.as_u64().unwrap()).collect()
        })
        .collect()
}

#[test]
fn groups_share_their_system_prompt_and_users_take_turns() {
    for multi_turn in [false, true] {
        let p = prompts(multi_turn);
        assert_eq!(p[0].len(), 15);
        assert_eq!(p[0][..10], p[1][..10], "users 0 and 1 are in group 0");
        assert_ne!(p[0][..10], p[2][..10], "user 2 is in group 1");
        assert_eq!(p[2][..10], p[3][..10]);
        assert_ne!(p[0][10..], p[1][10..], "each user asks its own question");
    }
}

#[test]
fn a_multi_turn_user_resends_its_prompt_and_a_single_turn_one_asks_anew() {
    let multi = prompts(true);
    assert_eq!(multi[0], multi[4], "user 0's second turn");
    assert_eq!(multi[3], multi[7]);
    let single = prompts(false);
    assert_eq!(single[0][..10], single[4][..10]);
    assert_ne!(single[0][10..], single[4][10..]);
}
