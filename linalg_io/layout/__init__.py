"""Where data lives and what moves, as pure math (no MPI): the models import only this
package and `linalg_io.models`, the algorithms execute what it describes.

words           `WORD`: bytes of one matrix entry, the unit of every count
blockcyclic     ScaLAPACK's block-cyclic index maps
axes            one-dimensional index maps (block-cyclic, blocks, explicit owners)
layouts         distributed-matrix layouts: a row map times a column map
grid_shapes     process-grid shapes (divisors, squarest grids)
schedules       the point-to-point schedules of the own collectives, and their costs
redist_plan     `RedistPlan`: a redistribution's rounds and their cost
lu2d_steps      the 2D LU's steps: message sizes, partners and phases
conflux_layout  the 2.5D LU's tiles and `StepPlan`
generate        deterministic test matrices, entry by entry
"""
