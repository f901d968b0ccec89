//! GitLab's review round. GitLab has no review object: a reviewer's comments are diff discussions
//! that arrive one note hook at a time. The rule that makes "one review → one cycle" there: the
//! first diff note the gate lets through takes every discussion of the merge request that is
//! still unresolved, was opened by a person the gate lets steer Replan (Developer or more, or
//! `allowed_users`) and that no earlier round took up. Later notes of the same batch name a
//! discussion a round already took and stay silent (`SessionState::review`).

use crate::forge::Forge;
use crate::history::SessionState;
use crate::trigger::gitlab_event::is_gitlab_bot;
use crate::trigger::{
    Actor, GateDecision, GateInput, GatePolicy, Permission, ReviewThread, decide,
};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// Who may steer Replan, looked up once per person.
struct Steering<'a> {
    forge: &'a dyn Forge,
    policy: &'a GatePolicy,
    now: DateTime<Utc>,
    known: BTreeMap<String, bool>,
}

impl Steering<'_> {
    async fn may(&mut self, login: &str) -> bool {
        if let Some(known) = self.known.get(login) {
            return *known;
        }
        let actor = Actor {
            login: login.to_owned(),
            id: None,
            is_bot: is_gitlab_bot(login),
        };
        let permission = if actor.is_bot {
            Permission::Unknown("a bot: not looked up".into())
        } else {
            self.forge.gate_permission(login).await
        };
        let allowed = decide(&GateInput {
            actor: &actor,
            permission,
            policy: self.policy,
            comment: None,
            run_started_at: self.now,
            scheduled: false,
        }) == GateDecision::Allow;
        self.known.insert(login.to_owned(), allowed);
        allowed
    }
}

/// The discussions of this round, their comments named with the round's `review_id` (the
/// discussion of the note that started it) as GitHub names a review's comments; every other
/// discussion is left out. Only the words of people who may steer Replan stay in a discussion:
/// nobody below Developer reaches the model through a review.
pub async fn take(
    threads: Vec<ReviewThread>,
    review_id: &str,
    state: &SessionState,
    forge: &dyn Forge,
    policy: &GatePolicy,
    now: DateTime<Utc>,
) -> Vec<ReviewThread> {
    let mut steering = Steering {
        forge,
        policy,
        now,
        known: BTreeMap::new(),
    };
    let mut round = Vec::new();
    for mut thread in threads {
        if thread.resolved || state.review(&thread.id).is_some() {
            continue;
        }
        let Some(opener) = thread.comments.first().map(|c| c.author.clone()) else {
            continue;
        };
        if !steering.may(&opener).await {
            continue;
        }
        let mut kept = Vec::new();
        for mut comment in std::mem::take(&mut thread.comments) {
            if steering.may(&comment.author).await {
                comment.review_id = Some(review_id.to_owned());
                kept.push(comment);
            }
        }
        thread.comments = kept;
        round.push(thread);
    }
    round
}
