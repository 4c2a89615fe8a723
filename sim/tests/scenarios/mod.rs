//! Scenarios the simulation's test files share.

use stateseal_sim::Scenario;

/// Half a day of `instances` with a rotation every 3 h and none of the
/// week's faults (no restarts, outage, partition or emergency rotation): the
/// ground a test adds its one fault or condition to.
pub(crate) fn quiet_half_day(instances: usize) -> Scenario {
    let mut s = Scenario::fleet_week(instances);
    s.days = 0.5;
    s.rotation_period = 3.0 * 3600.0;
    s.restart_every = None;
    s.cold_restart_at = None;
    s.store_outage = None;
    s.partition = None;
    s.emergency_at = None;
    s
}
