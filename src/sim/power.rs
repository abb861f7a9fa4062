//! Accelerator power: each card draws its idle power between steps and, during a step,
//! between 60% of its board power (a memory-bound decode step) and all of it (a step with as
//! many tokens as the card's roofline ridge point, where it turns compute-bound). Idle power
//! is a tenth of the board power. Served by `sim serve` under NVIDIA DCGM's metric names.

use super::config::EngineConfig;

/// Share of the board power a memory-bound step draws above idle.
const MEMORY_BOUND_SHARE: f64 = 0.6;
/// Idle power as a share of the board power.
const IDLE_SHARE: f64 = 0.1;

/// The power model of one deployment (all its cards together).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PowerModel {
    /// Watts of the deployment's cards at idle.
    pub idle_w: f64,
    board_w: f64,
    ridge_tokens: f64,
    cards: f64,
}

impl PowerModel {
    /// The model of `cfg`'s cards (board power from the card profile).
    pub(crate) fn of(cfg: &EngineConfig) -> PowerModel {
        let card = &cfg.card;
        let cards = f64::from(cfg.tp);
        PowerModel {
            idle_w: IDLE_SHARE * card.board_w * cards,
            board_w: card.board_w,
            // 2 FLOPs per weight per token against 2 bytes per 16-bit weight read.
            ridge_tokens: card.tflops * 1e12 / (card.hbm_gbps * 1e9),
            cards,
        }
    }

    /// Watts drawn during a step computing `tokens` tokens.
    pub(crate) fn step_watts(&self, tokens: u32) -> f64 {
        let load = (f64::from(tokens) / self.ridge_tokens).min(1.0);
        let share = MEMORY_BOUND_SHARE + (1.0 - MEMORY_BOUND_SHARE) * load;
        let idle = IDLE_SHARE * self.board_w;
        self.cards * (idle + (self.board_w - idle) * share)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Params;
    use crate::sim::config::Deployment;

    fn model(card: &str, tp: u32) -> PowerModel {
        let d = Deployment::vllm(card, "Qwen2.5-7B", tp);
        PowerModel::of(&EngineConfig::resolve(&d, &Params::new()).unwrap())
    }

    #[test]
    fn bigger_steps_draw_more_up_to_the_board_power_and_cards_add_up() {
        let h100 = model("H100", 1);
        assert_eq!(h100.idle_w, 70.0);
        let decode = h100.step_watts(8);
        let prefill = h100.step_watts(8192);
        assert!(
            h100.idle_w < decode && decode < prefill,
            "{decode} {prefill}"
        );
        assert_eq!(prefill, 700.0);
        assert_eq!(model("H100", 2).step_watts(8192), 1400.0);
    }
}
